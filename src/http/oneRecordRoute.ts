import { Hono, type Context } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { getPath } from 'hono/utils/url';
import type { Authenticate } from './auth.js';
import type { OneRecordHandler } from './records.js';
import { aroundRequest, type RequestScope } from './requestContext.js';
import type { AppEnv } from './types.js';

/** The paths the main app routes to GET one record (`/api/v1/:object/:id`, a parameter being `[^/]+`). */
const ROUTE = '/api/v1/:object/:id';
const ONE_RECORD = /^\/api\/v1\/[^/]+\/[^/]+$/;

/**
 * GET one record, the API's most frequent request, answered by a Hono app of its own with that one
 * route. Hono calls a route's only handler directly, where the main app composes its chain of
 * three (request scope, authentication, handler) per request, with an async step, a promise and a
 * microtask turn each. Here the same three are composed by hand, synchronous when the stores answer
 * at once, with the same error mapping, request id, log line and metrics. The main app still has
 * the route (HEAD is routed there as a GET), and takes every other request.
 */
export function withOneRecordRoute(
  app: Hono<AppEnv>,
  scope: RequestScope,
  authenticate: Authenticate,
  oneRecord: OneRecordHandler,
  onError: (error: unknown, c: Context<AppEnv>) => Response,
): Hono<AppEnv> {
  const fetch = app.fetch;
  const one = new Hono<AppEnv>({ router: new RegExpRouter() });
  const authenticated: OneRecordHandler = (c) => {
    const waiting = authenticate(c);
    return waiting ? waiting.then(() => oneRecord(c)) : oneRecord(c);
  };
  one.get(ROUTE, aroundRequest(scope, ROUTE, authenticated, onError));
  // Unreachable while ONE_RECORD and the route agree; should they not, the main app answers.
  one.notFound((c) => fetch(c.req.raw, c.env));
  one.onError(onError);
  one.router.match('GET', '/');
  app.fetch = (request, env, executionCtx) =>
    request.method === 'GET' && ONE_RECORD.test(getPath(request)) ? one.fetch(request, env, executionCtx) : fetch(request, env, executionCtx);
  return app;
}

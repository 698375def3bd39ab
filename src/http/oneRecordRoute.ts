import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { Params, Result, Router } from 'hono/router';
import { getPath } from 'hono/utils/url';
import type { Authenticate } from './auth.js';
import type { OneRecordHandler } from './records.js';
import { aroundRequest, type RequestScope } from './requestContext.js';
import type { AppEnv } from './types.js';

/** The paths the main app routes to GET one record (`/api/v1/:object/:id`, a parameter being `[^/]+`). */
const ROUTE = '/api/v1/:object/:id';
const ONE_RECORD = /^\/api\/v1\/([^/]+)\/([^/]+)$/;

/**
 * The one-record app's router: its one route's parameters cut from the path by ONE_RECORD. The
 * RegExpRouter first looks a path up among its static routes, a property lookup by the path, a
 * new string per request that V8 hashes and looks up in its string table.
 */
class OneRecordRouter<T> implements Router<T> {
  name = 'OneRecordRouter';
  private route: T | undefined;

  add(method: string, path: string, handler: T): void {
    if (method !== 'GET' || path !== ROUTE || this.route !== undefined) throw new Error(`the one-record app routes GET ${ROUTE} alone, not ${method} ${path}`);
    this.route = handler;
  }

  match(method: string, path: string): Result<T> {
    const parts = method === 'GET' && this.route !== undefined ? ONE_RECORD.exec(path) : null;
    if (parts === null) return [[]];
    const params: Params = { object: parts[1]!, id: parts[2]! };
    return [[[this.route!, params]]];
  }
}

/**
 * GET one record, the API's most frequent request, answered by a Hono app of its own with that one
 * route. Hono calls a route's only handler directly, where the main app composes its chain of
 * three (request scope, authentication, handler) per request, with an async step, a promise and a
 * microtask turn each. Here the same three are composed by hand, synchronous when the stores answer
 * at once, with the same error mapping, request id, log line and metrics. Any other middleware of
 * the /api routes (`apiMiddleware`, the one list app.ts adds them from) runs here too, after
 * authentication as there, so the two paths cannot drift apart. The main app still has the route
 * (HEAD is routed there as a GET), and takes every other request.
 */
export function withOneRecordRoute(
  app: Hono<AppEnv>,
  scope: RequestScope,
  authenticate: Authenticate,
  apiMiddleware: readonly MiddlewareHandler<AppEnv>[],
  oneRecord: OneRecordHandler,
  onError: (error: unknown, c: Context<AppEnv>) => Response,
): Hono<AppEnv> {
  const fetch = app.fetch;
  const one = new Hono<AppEnv>({ router: new OneRecordRouter() });
  const handle = apiMiddleware.length === 0 ? oneRecord : throughMiddleware(apiMiddleware, oneRecord);
  const authenticated: OneRecordHandler = (c) => {
    const waiting = authenticate(c);
    return waiting ? waiting.then(() => handle(c)) : handle(c);
  };
  one.get(ROUTE, aroundRequest(scope, ROUTE, authenticated, onError));
  // Unreachable while ONE_RECORD and the route agree; should they not, the main app answers.
  one.notFound((c) => fetch(c.req.raw, c.env));
  one.onError(onError);
  app.fetch = (request, env, executionCtx) =>
    request.method === 'GET' && ONE_RECORD.test(getPath(request)) ? one.fetch(request, env, executionCtx) : fetch(request, env, executionCtx);
  return app;
}

/** The handler behind `middleware`, each called as Hono's chain calls it (`next` runs the rest; a returned Response answers). */
function throughMiddleware(middleware: readonly MiddlewareHandler<AppEnv>[], handler: OneRecordHandler): OneRecordHandler {
  return async (c) => {
    const step = async (index: number): Promise<void> => {
      if (index === middleware.length) {
        c.res = await handler(c);
        return;
      }
      const answer = await middleware[index]!(c, () => step(index + 1));
      if (answer instanceof Response) c.res = answer;
    };
    await step(0);
    return c.res;
  };
}

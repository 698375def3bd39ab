import { Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { bearerAuth, bearerAuthentication } from './auth.js';
import { bodySizeLimit } from './body.js';
import { bodyBudget } from './bodyBudget.js';
import { errorResponse, handleError } from './errors.js';
import { idempotency } from './idempotency.js';
import { healthRoutes } from './health.js';
import { metricsRoute } from './metrics.js';
import { openApiRoute } from './openapiRoute.js';
import { withOneRecordRoute } from './oneRecordRoute.js';
import { eventRoutes } from './events.js';
import { historyRoutes } from './history.js';
import { rateLimitCheck, rateLimited } from './rateLimit.js';
import { recordRoutes } from './records.js';
import { requestContext, requestScope } from './requestContext.js';
import { setupPage } from './setup/index.js';
import type { ApiDeps, AppEnv } from './types.js';

export function createApp(deps: ApiDeps): Hono<AppEnv> {
  // RegExpRouter matches a request with one precompiled expression per method, where the default
  // SmartRouter fell back to the TrieRouter's walk (a share of every request's profile) as soon as
  // one route was beyond the RegExpRouter. Chosen outright, such a route stops the start (see
  // the end) instead of slowing every request down.
  const app = new Hono<AppEnv>({ router: new RegExpRouter() });
  const scope = requestScope(deps.logger, deps.metrics);
  const limits = deps.rateLimits ? rateLimitCheck(deps.rateLimits) : null;
  const authenticate = limits ? rateLimited(bearerAuthentication(deps.setup, deps.clock), limits) : bearerAuthentication(deps.setup, deps.clock);
  app.use('*', requestContext(scope));
  healthRoutes(app, deps.readiness ?? []);
  if (deps.metrics && deps.serveMetrics) metricsRoute(app, deps.metrics);
  // Only where a body is read.
  app.on(['POST', 'PUT', 'PATCH'], '/api/*', bodySizeLimit());
  app.use('/api/*', bearerAuth(authenticate));
  const apiMiddleware = deps.apiMiddleware ?? [];
  for (const middleware of apiMiddleware) app.use('/api/*', middleware);
  app.on(['POST', 'PUT', 'PATCH'], '/api/*', bodyBudget());
  app.on(['POST', 'PATCH', 'DELETE'], '/api/*', idempotency(deps.idempotency, deps.clock));
  openApiRoute(app, deps);
  historyRoutes(app, deps);
  // Before the records routes, whose GET /api/v1/:object would take it.
  eventRoutes(app, deps);
  const oneRecord = recordRoutes(app, deps, limits);
  if (deps.setupPage) app.route('/setup', setupPage(deps.setupPage));

  app.notFound((c) => errorResponse(c, 404, `no such path: ${c.req.path}`));
  app.onError((error, c) => handleError(error, c, deps.logger));
  // The RegExpRouter compiles on its first match: done here, a route it cannot take stops the start.
  app.router.match('GET', '/');
  return withOneRecordRoute(app, scope, authenticate, apiMiddleware, oneRecord, (error, c) => handleError(error, c, deps.logger));
}

import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { bearerAuth } from './auth.js';
import { bodySizeLimit } from './body.js';
import { bodyBudget } from './bodyBudget.js';
import { errorResponse, handleError } from './errors.js';
import { idempotency } from './idempotency.js';
import { healthRoutes } from './health.js';
import { httpMetrics, metricsRoute } from './metrics.js';
import { openApiRoute } from './openapiRoute.js';
import { historyRoutes } from './history.js';
import { recordRoutes } from './records.js';
import { RequestLog } from './requestLog.js';
import { setupPage } from './setup/index.js';
import type { ApiDeps, AppEnv } from './types.js';

const REQUEST_ID = /^[\w.-]{1,128}$/;

export function createApp(deps: ApiDeps): Hono<AppEnv> {
  // RegExpRouter matches a request with one precompiled expression per method, where the default
  // SmartRouter fell back to the TrieRouter's walk (a share of every request's profile) as soon as
  // one route was beyond the RegExpRouter. Chosen outright, such a route fails every request
  // (test/api/routing.test.ts) instead of slowing every request down.
  const app = new Hono<AppEnv>({ router: new RegExpRouter() });
  if (deps.metrics) app.use('*', httpMetrics(deps.metrics));

  app.use('*', async (c, next) => {
    const given = c.req.header('X-Request-Id');
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    c.set('requestId', requestId);
    const log = new RequestLog(deps.logger, { requestId });
    c.set('log', log);
    // On Node's response itself, which merges it with the response's own headers: c.header()
    // would give every response a Headers object, a cost a GET of one record notices. In
    // process (app.request, the route tests) there is no Node response.
    const outgoing = (c.env as Partial<AppEnv['Bindings']> | undefined)?.outgoing;
    if (outgoing) outgoing.setHeader('X-Request-Id', requestId);
    else c.header('X-Request-Id', requestId);
    const started = performance.now();
    await next();
    if (!deps.logger.isLevelEnabled('info')) return;
    log.logger.info(
      { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round((performance.now() - started) * 10) / 10 },
      'request',
    );
  });
  healthRoutes(app, deps.readiness ?? []);
  if (deps.metrics && deps.serveMetrics) metricsRoute(app, deps.metrics);
  // Only where a body is read.
  app.on(['POST', 'PUT', 'PATCH'], '/api/*', bodySizeLimit());
  app.use('/api/*', bearerAuth(deps.setup, deps.clock));
  app.on(['POST', 'PUT', 'PATCH'], '/api/*', bodyBudget());
  app.on(['POST', 'PATCH', 'DELETE'], '/api/*', idempotency(deps.idempotency, deps.clock));
  openApiRoute(app, deps);
  historyRoutes(app, deps);
  recordRoutes(app, deps);
  if (deps.setupPage) app.route('/setup', setupPage(deps.setupPage));

  app.notFound((c) => errorResponse(c, 404, `no such path: ${c.req.path}`));
  app.onError((error, c) => handleError(error, c, deps.logger));
  // The RegExpRouter compiles on its first match: done here, a route it cannot take stops the start.
  app.router.match('GET', '/');
  return app;
}

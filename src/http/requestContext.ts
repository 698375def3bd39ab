import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Logger } from 'pino';
import type { Metrics } from '../core/metrics.js';
import { RequestLog } from './requestLog.js';
import type { AppEnv } from './types.js';

const REQUEST_ID = /^[\w.-]{1,128}$/;

/**
 * What every request gets, in one middleware (each middleware is one more step of Hono's chain
 * and one more awaited promise per request): its request id (the caller's X-Request-Id when
 * valid, echoed), its log context, the `request` line at info, and its observation in the
 * metrics by route template (never the raw path: ids would make a series each).
 */
export function requestContext(logger: Logger, metrics: Metrics | undefined): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const given = c.req.header('X-Request-Id');
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    c.set('requestId', requestId);
    const log = new RequestLog(logger, requestId);
    c.set('log', log);
    // On Node's response itself, which merges it with the response's own headers: c.header()
    // would give every response a Headers object, a cost a GET of one record notices. In
    // process (app.request, the route tests) there is no Node response.
    const outgoing = (c.env as Partial<AppEnv['Bindings']> | undefined)?.outgoing;
    if (outgoing) outgoing.setHeader('X-Request-Id', requestId);
    else c.header('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
      if (logger.isLevelEnabled('info')) {
        log.logger.info(
          { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round((performance.now() - started) * 10) / 10 },
          'request',
        );
      }
    } finally {
      if (metrics) metrics.httpRequest(routeLabel(c), c.req.method, c.res.status, (performance.now() - started) / 1000);
    }
  };
}

function routeLabel(c: Parameters<MiddlewareHandler<AppEnv>>[0]): string {
  const route = routePath(c, -1);
  return route === '*' || route === '/*' ? 'unmatched' : route;
}

import type { Hono, MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Metrics } from '../core/metrics.js';
import type { AppEnv } from './types.js';

/** Every answer observed by route template (never the raw path: ids would make a series each). */
export function httpMetrics(metrics: Metrics): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const route = routePath(c, -1);
      metrics.httpRequest(route === '*' || route === '/*' ? 'unmatched' : route, c.req.method, c.res.status, (performance.now() - started) / 1000);
    }
  };
}

/** GET /metrics in the Prometheus text format. */
export function metricsRoute(app: Hono<AppEnv>, metrics: Metrics): void {
  app.get('/metrics', async (c) => {
    const body = await metrics.registry.metrics();
    return c.body(body, 200, { 'Content-Type': metrics.registry.contentType });
  });
}

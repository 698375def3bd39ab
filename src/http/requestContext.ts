import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Logger } from 'pino';
import type { Metrics } from '../core/metrics.js';
import { answerHeader } from './answerHeader.js';
import { RequestLog } from './requestLog.js';
import type { AppEnv } from './types.js';

const REQUEST_ID = /^[\w.-]{1,128}$/;

/**
 * What every request gets: its request id (the caller's X-Request-Id when valid, echoed), its log
 * context, the `request` line at info, and its observation in the metrics by route template
 * (never the raw path: ids would make a series each). As a middleware for every route, and as
 * `aroundRequest` for a route whose whole chain is composed by hand (app.ts).
 */
export interface RequestScope {
  /** Sets the request's id and log; the returned time is given to `finish`. */
  begin(c: Context<AppEnv>): number;
  /** The `request` line. */
  log(c: Context<AppEnv>, status: number, started: number): void;
  /** The observation in the metrics; `route`, the template, when the caller knows it. */
  count(c: Context<AppEnv>, status: number, started: number, route?: string): void;
}

export function requestScope(logger: Logger, metrics: Metrics | undefined): RequestScope {
  return {
    begin(c) {
      const given = c.req.header('X-Request-Id');
      const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
      c.set('requestId', requestId);
      c.set('log', new RequestLog(logger, requestId));
      answerHeader(c, 'X-Request-Id', requestId);
      return performance.now();
    },
    log(c, status, started) {
      if (logger.isLevelEnabled('info')) {
        c.get('log').logger.info(
          { method: c.req.method, path: c.req.path, status, ms: Math.round((performance.now() - started) * 10) / 10 },
          'request',
        );
      }
    },
    count(c, status, started, route) {
      if (metrics) metrics.httpRequest(route ?? routeLabel(c), c.req.method, status, (performance.now() - started) / 1000);
    },
  };
}

/** The scope as a middleware: one step of Hono's chain. */
export function requestContext(scope: RequestScope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = scope.begin(c);
    try {
      await next();
      scope.log(c, c.res.status, started);
    } finally {
      scope.count(c, c.res.status, started);
    }
  };
}

/**
 * The scope around a handler that maps its own errors: what the middleware and Hono's chain do,
 * without a promise when the handler answers at once. `onError` is the app's error mapper; `route`
 * the handler's route template.
 */
export function aroundRequest(
  scope: RequestScope,
  route: string,
  handle: (c: Context<AppEnv>) => Response | Promise<Response>,
  onError: (error: unknown, c: Context<AppEnv>) => Response,
): (c: Context<AppEnv>) => Response | Promise<Response> {
  return (c) => {
    const started = scope.begin(c);
    let answer: Response | Promise<Response>;
    try {
      answer = handle(c);
    } catch (error) {
      answer = onError(error, c);
    }
    const done = (response: Response): Response => {
      try {
        scope.log(c, response.status, started);
      } finally {
        scope.count(c, response.status, started, route);
      }
      return response;
    };
    if (answer instanceof Promise) return answer.then(done, (error: unknown) => done(onError(error, c)));
    return done(answer);
  };
}

function routeLabel(c: Context<AppEnv>): string {
  const route = routePath(c, -1);
  return route === '*' || route === '/*' ? 'unmatched' : route;
}

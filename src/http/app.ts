import { randomUUID } from 'node:crypto';
import type { HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import type { CommandDeps } from '../../commands/deps.js';
import type { ReadStore } from '../readstore/port.js';
import type { SetupStore } from '../setup/port.js';
import { bearerAuth, type Caller } from './auth.js';
import { bodySizeLimit } from './body.js';
import { errorResponse, handleError } from './errors.js';
import { idempotency } from './idempotency.js';
import type { IdempotencyStore } from '../idempotency/port.js';
import { recordRoutes } from './records.js';
import { RequestLog } from './requestLog.js';

export interface ApiDeps {
  commands: CommandDeps;
  readStore: ReadStore;
  setup: SetupStore;
  idempotency: IdempotencyStore;
  logger: Logger;
  clock: () => Date;
}

export type AppEnv = { Bindings: HttpBindings; Variables: { requestId: string; log: RequestLog; caller: Caller } };

const REQUEST_ID = /^[\w.-]{1,128}$/;

export function createApp(deps: ApiDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.use('*', async (c, next) => {
    const given = c.req.header('X-Request-Id');
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    c.set('requestId', requestId);
    const log = new RequestLog(deps.logger, { requestId });
    c.set('log', log);
    // On Node's response itself, which merges it with the response's own headers: c.header()
    // would give every response a Headers object, 3% of the instructions of a GET of one record.
    c.env.outgoing.setHeader('X-Request-Id', requestId);
    const started = performance.now();
    await next();
    if (!deps.logger.isLevelEnabled('info')) return;
    log.logger.info(
      { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round((performance.now() - started) * 10) / 10 },
      'request',
    );
  });
  // Only where a body is read.
  app.on(['POST', 'PUT', 'PATCH'], '/api/*', bodySizeLimit());
  app.use('/api/*', bearerAuth(deps.setup, deps.clock));
  app.on(['POST', 'PATCH', 'DELETE'], '/api/*', idempotency(deps.idempotency, deps.clock));
  recordRoutes(app, deps);

  app.notFound((c) => errorResponse(c, 404, `no such path: ${c.req.path}`));
  app.onError((error, c) => handleError(error, c, deps.logger));
  return app;
}

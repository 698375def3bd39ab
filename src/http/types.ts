import type { MiddlewareHandler } from 'hono';
import type { HttpBindings } from '@hono/node-server';
import type { Logger } from 'pino';
import type { Metrics } from '../core/metrics.js';
import type { ReadinessCheck } from '../core/readiness.js';
import type { CommandDeps } from '../../commands/deps.js';
import type { IdempotencyStore } from '../idempotency/port.js';
import type { ReadStore } from '../readstore/port.js';
import type { Catalogues } from '../setup/catalogues.js';
import type { SetupStore } from '../setup/port.js';
import type { Caller } from './auth.js';
import type { RateLimits } from './rateLimit.js';
import type { RequestLog } from './requestLog.js';
import type { SetupPageDeps } from './setup/deps.js';

/** What the HTTP layer is given, and what each request carries: shared by the app and its routes. */

export interface ApiDeps {
  commands: CommandDeps;
  readStore: ReadStore;
  setup: SetupStore;
  idempotency: IdempotencyStore;
  /** The workspaces' catalogues (default objects plus their own), kept until a schema event. */
  catalogues: Catalogues;
  logger: Logger;
  clock: () => Date;
  /** Records every answer; with `serveMetrics`, GET /metrics on this app too (METRICS=on). */
  metrics?: Metrics;
  serveMetrics?: boolean;
  /** The conditions of GET /health/ready. */
  readiness?: ReadinessCheck[];
  /** API keys' rate limits (docs/sync-clients.md); absent: none. */
  rateLimits?: RateLimits;
  /** Aborted when the process begins to stop: long polls (GET /api/v1/events?wait=) answer at once. */
  stopping?: AbortSignal;
  /** The Setup web page at /setup (docs/setup.md); absent: not served. */
  setupPage?: SetupPageDeps;
  /**
   * Middleware every /api route runs after authentication, the one-record GET's own path
   * included (src/http/oneRecordRoute.ts composes the same list): the one list a middleware is
   * added to, so that no route can miss it.
   */
  apiMiddleware?: readonly MiddlewareHandler<AppEnv>[];
}

export type AppEnv = { Bindings: HttpBindings; Variables: { requestId: string; log: RequestLog; caller: Caller } };

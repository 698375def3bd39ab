import type { AddressInfo } from 'node:net';
import type { ServerType } from '@hono/node-server';
import type { Logger } from 'pino';
import { AutoNumbers } from '../commands/autoNumbers.js';
import { RateLimiter } from './ratelimit/limiter.js';
import type { CommandDeps } from '../commands/deps.js';
import { startProjector } from '../projections/projector.js';
import type { RunningProjection } from '../projections/runner.js';
import { writeHealthScores } from '../commands/healthScore.js';
import { firePlaybook } from '../commands/playbook/fire.js';
import { waitVisible } from '../projections/readYourWrites.js';
import { createWebhookSender, measuredEventStore, openBackends, type Backends } from './backends.js';
import type { Config } from './config.js';
import { setRollups } from '../commands/rollups.js';
import { createLogger } from './core/logger.js';
import type { Position } from './eventstore/position.js';
import type { Hono } from 'hono';
import { createApp } from './http/app.js';
import { composeSetupPage } from './http/setup/compose.js';
import { Catalogues } from './setup/catalogues.js';
import type { AppEnv } from './http/types.js';
import { startBackgroundRole } from './runtime/backgroundRole.js';
import { observeApi, type ApiObservability } from './runtime/observability.js';
import { closeGracefully, listen, SHUTDOWN_DEADLINE_MS } from './runtime/httpServer.js';
import type { Stoppable } from './core/supervisor.js';
import { startDispatcher, type RunningDispatcher } from './webhooks/dispatcher.js';
import { StatusReporter } from '../projections/runnerStatus.js';
import { WEBHOOKS_GROUP } from './webhooks/port.js';
import type { WebhookSender } from './webhooks/httpsSender.js';

/**
 * The composition of the roles (api, projector, dispatcher) over the backends of src/backends.ts:
 * what each role needs, started in this thread, or the API here and each other role in a thread.
 */

export interface RunningService {
  /** Base URL of the API when this process runs the api role. */
  url: string | null;
  /** Where METRICS_PORT serves /metrics in this process, or null. */
  metricsUrl: string | null;
  /** The API itself, for requests in process (`app.request`, as the route tests make them). */
  app: Hono<AppEnv> | null;
  backends: Backends;
  stop(): Promise<void>;
}

export async function startService(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
  clock: () => Date = () => new Date(),
): Promise<RunningService> {
  const backends = await openBackends(config, logger, { commitThread: config.roles.includes('api') });
  // Every role of this thread reads the workspaces' catalogues from here; a schema event drops one.
  const catalogues = new Catalogues(backends.events);
  await catalogues.watch();
  const projections: RunningProjection[] = [];
  let dispatcher: RunningDispatcher | null = null;
  let fanOutStatus: StatusReporter | null = null;
  let sender: WebhookSender | null = null;
  let pageSender: WebhookSender | null = null;
  let server: ServerType | null = null;
  let url: string | null = null;
  let app: Hono<AppEnv> | null = null;
  let observability: ApiObservability | null = null;
  let rateLimiter: RateLimiter | null = null;
  // A stop answers open long polls first: they would otherwise hold it until the shutdown deadline.
  const stopping = new AbortController();

  if (config.roles.includes('projector')) {
    let running: RunningProjection[] = [];
    projections.push(
      backends.whileSoleProjector(
        () => {
          logger.info('this process runs the projections');
          running = [
            startProjector({
              events: backends.events,
              readStore: backends.readStore,
              logger,
              catalogues,
              setRollups: (target, values, initial, metadata) => setRollups(backends.events, target, values, initial, metadata),
              fire: (firing) => firePlaybook(backends, firing),
              writeHealthScores: (workspaceId, scores) => writeHealthScores(backends.events, workspaceId, scores),
              clock,
              dailyCheckMs: config.reactorDailyCheckMs,
              listWorkspaceIds: async () => (await backends.setup.listWorkspaces()).map((workspace) => workspace.id),
            }),
          ];
        },
        async () => {
          await Promise.all(running.map((role) => role.stop()));
          running = [];
        },
      ),
    );
  }
  if (config.roles.includes('dispatcher')) {
    if (config.webhookAllowPrivateTargets) {
      logger.warn('WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhooks may target loopback and private networks; use this only for local development and tests');
    }
    sender = createWebhookSender(config);
    fanOutStatus = new StatusReporter(backends.readStore, WEBHOOKS_GROUP, logger);
    dispatcher = startDispatcher({
      events: backends.events,
      readStore: backends.readStore,
      webhooks: backends.webhooks,
      listUsers: (workspaceId) => backends.setup.listUsers(workspaceId),
      catalogues,
      sender,
      logger,
      clock,
      retryDelaysMs: config.webhookRetryDelaysMs,
      timeoutMs: config.webhookTimeoutMs,
      status: fanOutStatus,
    });
  }
  if (config.roles.includes('api')) {
    observability = await observeApi(config, backends);
    // The Setup page's own: its test event and resends are sent from the API process.
    pageSender = createWebhookSender(config);
    // The event store's chain, step 3 (src/backends.ts): the commands' appends are measured.
    const events = measuredEventStore(backends.events, observability.metrics);
    const commands: CommandDeps = {
      events,
      readStore: backends.readStore,
      autoNumbers: new AutoNumbers(events, { report: (err) => logger.warn({ err }, 'the audit of skipped auto numbers failed; it runs again as numbers are taken') }),
      listUsers: (workspaceId) => backends.setup.listUsers(workspaceId),
      waitVisible: (position: Position, object?: string) => waitVisible(backends.readStore, position, object),
      reportInternal: (err) => logger.error({ err }, 'a record of an upsert failed unexpectedly'),
    };
    rateLimiter = new RateLimiter(backends.rateLimits, () => clock().getTime(), (err) => logger.warn({ err }, 'could not record rate-limit refusals'));
    app = createApp({
      commands,
      readStore: backends.readStore,
      setup: backends.setup,
      idempotency: backends.idempotency,
      catalogues,
      logger,
      clock,
      metrics: observability.metrics,
      serveMetrics: config.metricsOnApi,
      readiness: observability.readiness,
      rateLimits: { limiter: rateLimiter, defaultLimit: config.rateLimitDefault, metrics: observability.metrics },
      stopping: stopping.signal,
      setupPage: composeSetupPage(backends, {
        sender: pageSender,
        retryDelaysMs: config.webhookRetryDelaysMs,
        allowPrivateTargets: config.webhookAllowPrivateTargets,
        catalogues,
        logger,
        clock,
      }),
    });
    server = await listen(app.fetch, config);
    const address = server.address() as AddressInfo;
    url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  }
  const metricsUrl = observability?.metricsUrl ?? null;
  logger.debug({ roles: config.roles, url, metricsUrl, pid: process.pid }, 'roles started');

  return {
    url,
    metricsUrl,
    app,
    backends,
    async stop() {
      stopping.abort();
      if (server) await closeGracefully(server, SHUTDOWN_DEADLINE_MS);
      await observability?.stop();
      rateLimiter?.close();
      await dispatcher?.stop();
      await fanOutStatus?.stop();
      sender?.close();
      pageSender?.close();
      await Promise.all(projections.map((projection) => projection.stop()));
      await catalogues.close();
      await backends.close();
    },
  };
}

/** The API on this thread and each other role this process has in a thread of its own. */
export async function startBesideTheApi(config: Config, logger: Logger): Promise<Stoppable & { url: string | null; metricsUrl: string | null }> {
  const background = config.roles.filter((role) => role !== 'api');
  if (!config.roles.includes('api') || background.length === 0) return startService(config, logger);
  const started = await Promise.allSettled(background.map((role) => startBackgroundRole({ ...config, roles: [role] }, logger)));
  const threads = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const stopThreads = () => Promise.all(threads.map((thread) => thread.stop()));
  try {
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    const api = await startService({ ...config, roles: ['api'] }, logger);
    return {
      url: api.url,
      metricsUrl: api.metricsUrl,
      async stop() {
        await api.stop();
        await stopThreads();
      },
    };
  } catch (error) {
    await stopThreads();
    throw error;
  }
}


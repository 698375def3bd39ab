import type { AddressInfo } from 'node:net';
import type { ServerType } from '@hono/node-server';
import type { Logger } from 'pino';
import { AutoNumbers } from '../commands/autoNumbers.js';
import type { CommandDeps } from '../commands/deps.js';
import { backfillLinkEdges } from '../projections/linkBackfill.js';
import { startProjector } from '../projections/projector.js';
import { startProjection, type RunningProjection } from '../projections/runner.js';
import { writeHealthScores } from '../commands/healthScore.js';
import { firePlaybook } from '../commands/playbook/fire.js';
import { startReactors } from '../projections/reactors.js';
import { createWebhookSender, openBackends, type Backends } from './backends.js';
import type { Config } from './config.js';
import { Unavailable } from './core/errors.js';
import { setRollups } from '../commands/rollups.js';
import { appendedCheckpoint } from '../projections/projection.js';
import { rollupReactor, ROLLUPS_REACTOR } from '../projections/rollupReactor.js';
import { rollupDepthFrom } from './schema/calculated.js';
import { createLogger } from './core/logger.js';
import { comparePositions, type Position } from './eventstore/position.js';
import type { Hono } from 'hono';
import { createApp } from './http/app.js';
import { composeSetupPage } from './http/setup/compose.js';
import { Catalogues } from './setup/catalogues.js';
import type { AppEnv } from './http/types.js';
import { RECORDS_PROJECTION } from './readstore/port.js';
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

/** How long a write waits for the read models to show it before answering 503. */
const VISIBILITY_TIMEOUT_MS = 10_000;

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
  const backends = await openBackends(config, logger);
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

  if (config.roles.includes('projector')) {
    let running: RunningProjection[] = [];
    projections.push(
      backends.whileSoleProjector(
        () => {
          logger.info('this process runs the projections');
          const deps = { events: backends.events, readStore: backends.readStore, logger };
          const rollups = rollupReactor({ readStore: backends.readStore, setRollups: (target, values, initial, metadata) => setRollups(backends.events, target, values, initial, metadata) });
          running = [startProjector({ ...deps, catalogues }), startProjection(deps, rollups)];
          // Alongside, not before: the projection writes the edges after the checkpoint it starts from.
          backfillLinkEdges(deps).catch((error: unknown) =>
            logger.error({ err: error }, 'adding the link edges of older records failed; reads as of a past moment may miss children until the next start'),
          );
          running.push(startReactors({
            events: backends.events,
            readStore: backends.readStore,
            fire: (firing) => firePlaybook(backends, firing),
            writeHealthScores: (workspaceId, scores) => writeHealthScores(backends.events, workspaceId, scores),
            logger,
            clock,
            dailyCheckMs: config.reactorDailyCheckMs,
            listWorkspaceIds: async () => (await backends.setup.listWorkspaces()).map((workspace) => workspace.id),
            }),
          );
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
    observability = await observeApi(config, backends, catalogues);
    // The Setup page's own: its test event and resends are sent from the API process.
    pageSender = createWebhookSender(config);
    const commands: CommandDeps = {
      events: observability.events,
      readStore: backends.readStore,
      autoNumbers: new AutoNumbers(observability.events),
      listUsers: (workspaceId) => backends.setup.listUsers(workspaceId),
      waitVisible: (position: Position, object?: string) => waitVisible(backends, position, object),
      reportInternal: (err) => logger.error({ err }, 'a record of an upsert failed unexpectedly'),
    };
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
      if (server) await closeGracefully(server, SHUTDOWN_DEADLINE_MS);
      await observability?.stop();
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

/**
 * Read your writes, roll-ups included: the records projection has passed the write; and when the
 * written object feeds roll-ups, the roll-up reactor has reacted to it and the records projection
 * shows what it appended, level by level (invoice line -> invoice -> client), up to the deepest
 * cascade. Once the reactor has passed the write, what it appended for it is at or before the
 * last position it appended (its `.appended` checkpoint): the projection is waited for up to there.
 */
async function waitVisible(backends: Backends, position: Position, object?: string): Promise<void> {
  const deadline = Date.now() + VISIBILITY_TIMEOUT_MS;
  const waitFor = async (name: string, at: Position) => {
    if (!(await backends.readStore.waitForCheckpoint(name, at, Math.max(1, deadline - Date.now())))) {
      throw new Unavailable('the change is recorded but the read models have not caught up yet (is a projector running?); read it again shortly');
    }
  };
  await waitFor(RECORDS_PROJECTION, position);
  if (object === undefined) return;
  let at = position;
  for (let level = 0; level < rollupDepthFrom(object); level++) {
    await waitFor(ROLLUPS_REACTOR, at);
    const appended = await backends.readStore.checkpoint(appendedCheckpoint(ROLLUPS_REACTOR));
    if (appended === null || comparePositions(appended, at) <= 0) return;
    at = appended;
    await waitFor(RECORDS_PROJECTION, at);
  }
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


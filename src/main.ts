import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { serve, type ServerType } from '@hono/node-server';
import type { Logger } from 'pino';
import { recordProjection, RECORDS_PROJECTION } from '../projections/recordProjection.js';
import { startProjection, type RunningProjection } from '../projections/runner.js';
import { AutoNumbers } from '../commands/autoNumbers.js';
import type { CommandDeps } from '../commands/deps.js';
import { startApiProcesses } from './apiProcesses.js';
import { startBackgroundRole } from './backgroundRole.js';
import { loadConfig, type Config } from './config.js';
import { Unavailable } from './errors.js';
import type { EventStore } from './eventstore/port.js';
import type { Position } from './eventstore/position.js';
import { openSqliteEventStore } from './eventstore/sqlite.js';
import type { IdempotencyStore } from './idempotency/port.js';
import { openSqliteIdempotencyStore } from './idempotency/sqlite/index.js';
import { createApp } from './http/app.js';
import { createLogger } from './logger.js';
import type { ReadStore } from './readstore/port.js';
import { openSqliteReadStore } from './readstore/sqlite.js';
import type { SetupStore } from './setup/port.js';
import { openSqliteSetupStore } from './setup/sqlite.js';
import { startWalCheckpointer } from './sqliteCheckpointer.js';
import type { Stoppable } from './supervisor.js';
import { startDispatcher, type RunningDispatcher } from './webhooks/dispatcher.js';
import { createHttpsSender, type WebhookSender } from './webhooks/httpsSender.js';
import type { WebhookStore } from './webhooks/port.js';
import { openSqliteWebhookStore } from './webhooks/sqlite.js';

/**
 * The one composition root: config -> backends -> roles (api, projector, dispatcher).
 * Nothing else in the code knows which backend runs.
 */

export interface Backends {
  events: EventStore;
  readStore: ReadStore;
  setup: SetupStore;
  webhooks: WebhookStore;
  idempotency: IdempotencyStore;
  /**
   * Runs `start` only while this process may be the one active projector, and `stop` when it
   * may no longer be (production: a lease in MongoDB). The embedded store runs it at once: its
   * projector commits batches and checkpoint together, so a second one only replays no-ops.
   */
  whileSoleProjector(start: () => void, stop: () => Promise<void>): { stop(): Promise<void> };
  close(): Promise<void>;
}

/** EVENTSTORE_URL and MONGODB_URL (config.ts lets them come only together); null: the embedded store runs. */
function productionUrls(config: Config): { eventStore: string; mongoDb: string } | null {
  return config.eventStoreUrl && config.mongoDbUrl ? { eventStore: config.eventStoreUrl, mongoDb: config.mongoDbUrl } : null;
}

/** The embedded store's files in DATA_DIR, one per port. */
function embeddedFiles(dataDir: string): Record<'events' | 'readStore' | 'setup' | 'webhooks' | 'idempotency', string> {
  return {
    events: join(dataDir, 'events.db'),
    readStore: join(dataDir, 'read.db'),
    setup: join(dataDir, 'setup.db'),
    webhooks: join(dataDir, 'webhooks.db'),
    idempotency: join(dataDir, 'idempotency.db'),
  };
}

export async function openBackends(config: Config, logger?: Logger): Promise<Backends> {
  const urls = productionUrls(config);
  if (urls) return openProductionBackends(urls.eventStore, urls.mongoDb, logger);
  const files = embeddedFiles(config.dataDir);
  mkdirSync(config.dataDir, { recursive: true });
  const events = openSqliteEventStore({ path: files.events });
  const readStore = openSqliteReadStore({ path: files.readStore });
  const setup = openSqliteSetupStore({ path: files.setup });
  const webhooks = openSqliteWebhookStore({ path: files.webhooks });
  const idempotency = openSqliteIdempotencyStore({ path: files.idempotency });
  return {
    events,
    readStore,
    setup,
    webhooks,
    idempotency,
    whileSoleProjector(start, stop) {
      start();
      return { stop };
    },
    async close() {
      await Promise.all([events.close(), readStore.close(), setup.close(), webhooks.close(), idempotency.close()]);
    },
  };
}

/** EventStoreDB for the log, MongoDB (a replica set: projections commit in transactions) for the rest. */
async function openProductionBackends(eventStoreUrl: string, mongoDbUrl: string, logger?: Logger): Promise<Backends> {
  // Loaded only here: their clients take about 0.2 s to load (importing this module took 0.52 s
  // with them, 0.31 s without), which every embedded start and every `csr` command would pay.
  const [{ openEventStoreDb }, { mongoDatabase, openMongoReadStore }, { keepLease }, { openMongoSetupStore }, { openMongoWebhookStore }, { openMongoIdempotencyStore }] =
    await Promise.all([
      import('./eventstore/eventstoredb.js'),
      import('./readstore/mongodb.js'),
      import('./readstore/mongodbLease.js'),
      import('./setup/mongodb.js'),
      import('./webhooks/mongodb.js'),
      import('./idempotency/mongodb/index.js'),
    ]);
  const events = openEventStoreDb({ connectionString: eventStoreUrl, ...(logger ? { logger } : {}) });
  const { client, db } = await mongoDatabase({ url: mongoDbUrl });
  const readStore = await openMongoReadStore({ client });
  const setup = await openMongoSetupStore({ client });
  const webhooks = await openMongoWebhookStore({ client });
  const idempotency = await openMongoIdempotencyStore({ client });
  return {
    events,
    readStore,
    setup,
    webhooks,
    idempotency,
    whileSoleProjector(start, stop) {
      // Taken over within seconds (the lease's ttl) when the holder dies.
      const keeper = keepLease(db, {
        name: 'projector',
        holderId: `${hostname()}:${process.pid}:${randomUUID()}`,
        onChange: (held) => (held ? start() : stop()),
        ...(logger ? { logger } : {}),
      });
      return { stop: () => keeper.stop() };
    },
    async close() {
      await Promise.all([events.close(), readStore.close(), setup.close(), webhooks.close(), idempotency.close()]);
      await client.close();
    },
  };
}

/** The HTTPS sender of webhook requests, as configured (timeout, address rule, extra CAs). */
export function createWebhookSender(config: Config): WebhookSender {
  return createHttpsSender({
    timeoutMs: config.webhookTimeoutMs,
    allowPrivate: config.webhookAllowPrivateTargets,
    ...(config.webhookCaFile ? { extraCa: [readFileSync(config.webhookCaFile, 'utf8')] } : {}),
  });
}

/** How long a write waits for the read models to show it before answering 503. */
const VISIBILITY_TIMEOUT_MS = 10_000;

export interface RunningService {
  /** Base URL of the API when this process runs the api role. */
  url: string | null;
  backends: Backends;
  stop(): Promise<void>;
}

export async function startService(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
  clock: () => Date = () => new Date(),
): Promise<RunningService> {
  const backends = await openBackends(config, logger);
  const projections: RunningProjection[] = [];
  let dispatcher: RunningDispatcher | null = null;
  let sender: WebhookSender | null = null;
  let server: ServerType | null = null;
  let url: string | null = null;

  if (config.roles.includes('projector')) {
    let running: RunningProjection | null = null;
    projections.push(
      backends.whileSoleProjector(
        () => {
          logger.info('this process runs the projections');
          running = startProjection({ events: backends.events, readStore: backends.readStore, logger }, recordProjection);
        },
        async () => {
          await running?.stop();
          running = null;
        },
      ),
    );
  }
  if (config.roles.includes('dispatcher')) {
    if (config.webhookAllowPrivateTargets) {
      logger.warn('WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhooks may target loopback and private networks; use this only for local development and tests');
    }
    sender = createWebhookSender(config);
    dispatcher = startDispatcher({
      events: backends.events,
      readStore: backends.readStore,
      webhooks: backends.webhooks,
      listUsers: (workspaceId) => backends.setup.listUsers(workspaceId),
      sender,
      logger,
      clock,
      retryDelaysMs: config.webhookRetryDelaysMs,
      timeoutMs: config.webhookTimeoutMs,
    });
  }
  if (config.roles.includes('api')) {
    const commands: CommandDeps = {
      events: backends.events,
      readStore: backends.readStore,
      autoNumbers: new AutoNumbers(backends.events),
      listUsers: (workspaceId) => backends.setup.listUsers(workspaceId),
      waitVisible: (position: Position) => waitVisible(backends.readStore, position),
    };
    const app = createApp({ commands, readStore: backends.readStore, setup: backends.setup, idempotency: backends.idempotency, logger, clock });
    server = await new Promise<ServerType>((resolve) => {
      const started = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, () => resolve(started));
    });
    const address = server.address() as AddressInfo;
    url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  }
  logger.info({ roles: config.roles, url, dataDir: config.dataDir, pid: process.pid }, 'service started');

  return {
    url,
    backends,
    async stop() {
      if (server) await new Promise((resolve) => server!.close(resolve));
      await dispatcher?.stop();
      sender?.close();
      await Promise.all(projections.map((projection) => projection.stop()));
      await backends.close();
    },
  };
}

async function waitVisible(readStore: ReadStore, position: Position): Promise<void> {
  const visible = await readStore.waitForCheckpoint(RECORDS_PROJECTION, position, VISIBILITY_TIMEOUT_MS);
  if (!visible) {
    throw new Unavailable('the change is recorded but the read models have not caught up yet (is a projector running?); read it again shortly');
  }
}

/** The API on this thread and each other role this process has in a thread of its own. */
async function startBesideTheApi(config: Config, logger: Logger): Promise<Stoppable> {
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

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  // Listened for before anything starts: a signal that comes while the roles are starting stops
  // them once they have started, where it used to kill the process halfway through starting.
  const stopSignal = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    // An API process of API_PROCESSES: its primary is gone (even by SIGKILL), so it goes too.
    if (cluster.isWorker) process.once('disconnect', () => resolve('disconnect'));
  });
  const service =
    cluster.isPrimary && config.apiProcesses > 1 && config.roles.includes('api')
      ? await startApiProcesses(config, logger, (others) => startService(others, logger))
      : await startBesideTheApi(config, logger);
  // One per server: the API processes of API_PROCESSES leave their files to their primary's.
  const checkpointer =
    cluster.isPrimary && !productionUrls(config)
      ? await startWalCheckpointer(Object.values(embeddedFiles(config.dataDir)), logger).catch(async (error: unknown) => {
          await service.stop();
          throw error;
        })
      : null;
  const signal = await stopSignal;
  logger.info({ signal }, 'shutting down');
  try {
    await service.stop();
    await checkpointer?.stop();
  } catch (error) {
    logger.error({ err: error }, 'shutdown failed');
    process.exit(1);
  }
  process.exit(0);
}

// The background role threads import this module too: only the process's main thread is `main`.
if (isMainThread && process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}

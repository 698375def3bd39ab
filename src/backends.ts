import { randomUUID, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { assertMasterKeyGiven, type Config } from './config.js';
import type { EventStore } from './eventstore/port.js';
import type { IdempotencyStore } from './idempotency/port.js';
import { openSqliteIdempotencyStore } from './idempotency/sqlite/index.js';
import { openSqliteEventStore } from './eventstore/sqlite/index.js';
import type { RateLimitStore } from './ratelimit/port.js';
import { openSqliteRateLimitStore } from './ratelimit/sqlite/index.js';
import type { ReadStore } from './readstore/port.js';
import { openSqliteReadStore } from './readstore/sqlite/index.js';
import type { SetupStore } from './setup/port.js';
import { openSqliteSetupStore } from './setup/sqlite/index.js';
import type { SessionStore } from './setup/sessionPort.js';
import { openSqliteSessionStore } from './setup/sqlite/sessions.js';
import { createHttpsSender, type WebhookSender } from './webhooks/httpsSender.js';
import type { WebhookStore } from './webhooks/port.js';
import { openSqliteWebhookStore } from './webhooks/sqlite/index.js';
import { withPrivacy } from './privacy/index.js';
import type { KeyStore } from './privacy/port.js';
import { instrumentAppends } from './eventstore/instrumented.js';
import type { Metrics } from './core/metrics.js';
import { openSqliteKeyStore } from './privacy/sqlite/index.js';
import { truncateWal } from './sqlite/file.js';
import { makeDirectory } from './core/makeDirectory.js';

/**
 * The one place that chooses adapters: the embedded store (SQLite files in DATA_DIR) by default,
 * EventStoreDB + MongoDB when both URLs are configured. Nothing else in the code knows which runs.
 */

export interface Backends {
  events: EventStore;
  readStore: ReadStore;
  setup: SetupStore;
  webhooks: WebhookStore;
  idempotency: IdempotencyStore;
  /** Sign-ins to the Setup page (links and sessions). */
  sessions: SessionStore;
  /**
   * API keys' rate-limit buckets (docs/sync-clients.md): on the embedded store a file in DATA_DIR,
   * shared by the API processes of the machine; on PostgreSQL and on EventStoreDB + MongoDB in the
   * shared database, one bucket per key across every machine.
   */
  rateLimits: RateLimitStore;
  /**
   * Runs `start` only while this process may be the one active projector, and `stop` when it
   * may no longer be (production: a lease in MongoDB). The embedded store runs it at once: its
   * projector commits batches and checkpoint together, so a second one only replays no-ops.
   */
  whileSoleProjector(start: () => void, stop: () => Promise<void>): { stop(): Promise<void> };
  /** After an erasure: leaves no old page of the store files on disk (the embedded store's WALs). */
  scrub(): Promise<void>;
  close(): Promise<void>;
}

/** The stores of one backend: every port's adapter, closed together. */
type Stores = Pick<Backends, 'events' | 'readStore' | 'setup' | 'webhooks' | 'idempotency' | 'sessions' | 'rateLimits'>;

async function closeAll(stores: Stores): Promise<void> {
  await Promise.all(Object.values(stores).map((store) => store.close()));
}

/** Whether the embedded store runs (no DATABASE_URL, no EVENTSTORE_URL/MONGODB_URL): files in DATA_DIR, one machine. */
export function isEmbedded(config: Config): boolean {
  return productionUrls(config) === null && !config.databaseUrl;
}

/** The backend in one phrase, for the start line and messages. */
export function backendName(config: Config): string {
  if (config.databaseUrl) return 'PostgreSQL';
  if (productionUrls(config)) return 'EventStoreDB + MongoDB';
  return `embedded store in ${resolve(config.dataDir)}`;
}

/** EVENTSTORE_URL and MONGODB_URL (config.ts lets them come only together); null: the embedded store runs. */
export function productionUrls(config: Config): { eventStore: string; mongoDb: string } | null {
  return config.eventStoreUrl && config.mongoDbUrl ? { eventStore: config.eventStoreUrl, mongoDb: config.mongoDbUrl } : null;
}

/** The embedded store's files in DATA_DIR, one per port. */
export function embeddedFiles(dataDir: string): Record<'events' | 'readStore' | 'setup' | 'webhooks' | 'idempotency' | 'sessions' | 'keys', string> {
  return {
    events: join(dataDir, 'events.db'),
    readStore: join(dataDir, 'read.db'),
    setup: join(dataDir, 'setup.db'),
    webhooks: join(dataDir, 'webhooks.db'),
    idempotency: join(dataDir, 'idempotency.db'),
    sessions: join(dataDir, 'sessions.db'),
    keys: join(dataDir, 'keys.db'),
  };
}

/** The embedded store's rate-limit buckets' file in DATA_DIR, one per machine. */
export function rateLimitFile(dataDir: string): string {
  return join(dataDir, 'ratelimits.db');
}

/** Makes DATA_DIR if need be, or says in one line why it cannot hold the store. */
export function ensureDataDir(dataDir: string): void {
  try {
    makeDirectory(dataDir);
  } catch (error) {
    throw new Error(`cannot use DATA_DIR=${resolve(dataDir)} for the store: ${(error as Error).message} (it must be a folder this user can write)`);
  }
}

/**
 * The event store's chain: its wrappers are composed here and nowhere else, innermost first
 * (docs/design.md draws it):
 *   1. the adapter (`src/eventstore/<backend>/`): the log itself;
 *   2. personal-data sealing (`src/privacy`): personal fields sealed under their record's data key
 *      before they are appended, opened as events are read, so no layer above ever handles a
 *      sealed value. Every user of `Backends.events` (the roles, `csr`) gets the log from here;
 *   3. append metrics (`src/eventstore/instrumented.ts`): appends timed and counted for /metrics,
 *      outside the sealing so that its cost counts as part of an append. Only the api role's
 *      commands get this one (src/service.ts): what the reactors append is not an API write.
 */
async function sealedEventStore(adapter: EventStore, keys: KeyStore, config: Config): Promise<EventStore> {
  return withPrivacy(adapter, keys, config);
}

/** Step 3 of the chain above, for the api role's commands. */
export function measuredEventStore(sealed: EventStore, metrics: Metrics): EventStore {
  return instrumentAppends(sealed, metrics);
}

/**
 * `commitThread`: the embedded log commits on a thread of its own (threadedCommitter.ts), for the
 * process that serves the API; the other roles and the `csr` tool commit on their own thread.
 */
export async function openBackends(config: Config, logger?: Logger, options: { commitThread?: boolean } = {}): Promise<Backends> {
  // loadConfig checks it too; a Config made otherwise must not make a key per process of a shared backend.
  assertMasterKeyGiven(config);
  if (config.databaseUrl) return openPostgresBackends(config, config.databaseUrl, logger);
  const urls = productionUrls(config);
  if (urls) return openProductionBackends(config, urls.eventStore, urls.mongoDb, logger);
  const files = embeddedFiles(config.dataDir);
  ensureDataDir(config.dataDir);
  const stored = openSqliteEventStore({ path: files.events, commitThread: options.commitThread === true });
  const events = await sealedEventStore(stored, openSqliteKeyStore({ path: files.keys }), config).catch(async (error: unknown) => {
    await stored.close();
    throw error;
  });
  const stores: Stores = {
    events,
    readStore: openSqliteReadStore({ path: files.readStore }),
    setup: openSqliteSetupStore({ path: files.setup }),
    webhooks: openSqliteWebhookStore({ path: files.webhooks }),
    idempotency: openSqliteIdempotencyStore({ path: files.idempotency }),
    sessions: openSqliteSessionStore({ path: files.sessions }),
    rateLimits: openSqliteRateLimitStore({ path: rateLimitFile(config.dataDir) }),
  };
  return {
    ...stores,
    whileSoleProjector(start, stop) {
      start();
      return { stop };
    },
    async scrub() {
      const stuck: string[] = [];
      for (const path of Object.values(files)) if (!(await truncateWal(path))) stuck.push(path);
      if (stuck.length > 0) throw new Error(`an erasure could not checkpoint ${stuck.length} store file(s) while other readers held them; run csr privacy erase again`);
    },
    close: () => closeAll(stores),
  };
}

/** EventStoreDB for the log, MongoDB (a replica set: projections commit in transactions) for the rest. */
async function openProductionBackends(config: Config, eventStoreUrl: string, mongoDbUrl: string, logger?: Logger): Promise<Backends> {
  // Loaded only here: their clients take a noticeable share of a second to load, which every
  // embedded start and every `csr` command would pay (docs/performance.md).
  const [
    { openEventStoreDb },
    { mongoDatabase, openMongoReadStore },
    { keepLease },
    { openMongoSetupStore },
    { openMongoWebhookStore },
    { openMongoIdempotencyStore },
    { openMongoSessionStore },
    { openMongoKeyStore },
    { openMongoRateLimitStore },
  ] =
    await Promise.all([
      import('./eventstore/eventstoredb/index.js'),
      import('./readstore/mongodb/index.js'),
      import('./readstore/mongodb/lease.js'),
      import('./setup/mongodb/index.js'),
      import('./webhooks/mongodb/index.js'),
      import('./idempotency/mongodb/index.js'),
      import('./setup/mongodb/sessions.js'),
      import('./privacy/mongodb/index.js'),
      import('./ratelimit/mongodb/index.js'),
    ]);
  const { client, db } = await mongoDatabase({ url: mongoDbUrl });
  const events = await sealedEventStore(openEventStoreDb({ connectionString: eventStoreUrl, ...(logger ? { logger } : {}) }), await openMongoKeyStore({ client }), config);
  const stores: Stores = {
    events,
    readStore: await openMongoReadStore({ client }),
    setup: await openMongoSetupStore({ client }),
    webhooks: await openMongoWebhookStore({ client }),
    idempotency: await openMongoIdempotencyStore({ client }),
    sessions: await openMongoSessionStore({ client }),
    // In the shared database: a key's one bucket across every process and machine.
    rateLimits: await openMongoRateLimitStore({ client }),
  };
  return {
    ...stores,
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
    // MongoDB and EventStoreDB keep their own files; what they leave on disk is theirs to manage (docs/privacy.md).
    async scrub() {},
    async close() {
      await closeAll(stores);
      await client.close();
    },
  };
}

/**
 * PostgreSQL for everything (DATABASE_URL): one pool per process shared by every adapter, the
 * projector lease in a table, its fencing checked in every live checkpoint write. Loaded only
 * here, like the production clients, so that embedded starts do not pay for the driver.
 */
async function openPostgresBackends(config: Config, url: string, logger?: Logger): Promise<Backends> {
  const [
    { openPool },
    { keepLease },
    { openPostgresEventStore },
    { openPostgresKeyStore },
    { openPostgresReadStore },
    { openPostgresSetupStore },
    { openPostgresWebhookStore },
    { openPostgresIdempotencyStore },
    { openPostgresSessionStore },
    { openPostgresRateLimitStore },
    { mappingUnreachable },
  ] = await Promise.all([
    import('./postgres/pool.js'),
    import('./postgres/lease.js'),
    import('./eventstore/postgres/index.js'),
    import('./privacy/postgres/index.js'),
    import('./readstore/postgres/index.js'),
    import('./setup/postgres/index.js'),
    import('./webhooks/postgres/index.js'),
    import('./idempotency/postgres/index.js'),
    import('./setup/postgres/sessions.js'),
    import('./ratelimit/postgres/index.js'),
    import('./postgres/unreachable.js'),
  ]);
  const pool = openPool({ url, applicationName: `csr ${config.roles.join(',')}` });
  let lease: { fenceSql(): string } | null = null;
  try {
    const keys = await openPostgresKeyStore({ pool });
    const events = await sealedEventStore(await openPostgresEventStore({ pool }), keys, config);
    // A server restarting answers 503 (retry), not 500: every store's unreachable-server failure is Unavailable.
    const stores: Stores = {
      events,
      // Only a process that asked to be the projector holds a lease; its live checkpoint writes are fenced by it.
      readStore: mappingUnreachable(await openPostgresReadStore({ pool, fence: () => lease?.fenceSql() ?? null })),
      setup: mappingUnreachable(await openPostgresSetupStore({ pool })),
      webhooks: mappingUnreachable(await openPostgresWebhookStore({ pool })),
      idempotency: mappingUnreachable(await openPostgresIdempotencyStore({ pool })),
      sessions: mappingUnreachable(await openPostgresSessionStore({ pool })),
      // In the shared database: a key's one bucket across every process and machine.
      rateLimits: mappingUnreachable(await openPostgresRateLimitStore({ pool })),
    };
    return {
      ...stores,
      whileSoleProjector(start, stop) {
        // Taken over within seconds (the lease's ttl) when the holder dies.
        const keeper = keepLease(pool, {
          name: 'projector',
          holder: `${hostname()}:${process.pid}:${randomUUID()}`,
          onChange: (held) => (held ? start() : stop()),
          ...(logger ? { logger } : {}),
        });
        lease = keeper;
        return { stop: () => keeper.stop() };
      },
      // The key store VACUUMs its table after every erasure; the WAL and backups are the operator's (docs/privacy.md).
      scrub: () => keys.scrub(),
      async close() {
        await closeAll(stores);
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}

/** The HTTPS sender of webhook requests, as configured (timeout, address rule, extra CAs). */
export function createWebhookSender(config: Config): WebhookSender {
  return createHttpsSender({
    timeoutMs: config.webhookTimeoutMs,
    allowPrivate: config.webhookAllowPrivateTargets,
    ...(config.webhookCaFile ? { extraCa: [readCaFile(config.webhookCaFile)] } : {}),
  });
}

function readCaFile(path: string): string {
  const refuse = (reason: string) => new Error(`cannot read WEBHOOK_CA_FILE=${resolve(path)}: ${reason} (it must be a PEM file of CA certificates this user can read)`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw refuse((error as NodeJS.ErrnoException).code ?? (error as Error).message);
  }
  // Refused at start: a file that is no certificate would only show as every delivery failing later.
  const certificates = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (certificates.length === 0) throw refuse('it holds no PEM certificate');
  for (const [index, certificate] of certificates.entries()) {
    try {
      new X509Certificate(certificate);
    } catch {
      throw refuse(`certificate ${index + 1} of ${certificates.length} cannot be parsed`);
    }
  }
  return text;
}


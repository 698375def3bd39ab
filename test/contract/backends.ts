import { closeSync, openSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { freePort } from '../support/ports.js';

/**
 * The production backends for the contract suites: EventStoreDB and MongoDB, real servers only.
 *
 * 1. `EVENTSTORE_URL` / `MONGODB_URL` set: those servers are used (MongoDB must be a replica set).
 * 2. Otherwise, when a Docker engine answers: containers are started with testcontainers
 *    (EventStoreDB `eventstore/eventstore:24.10`, single node, insecure; `mongo:7` as a
 *    single-node replica set `rs0`) on fixed free host ports, so that a restart keeps their
 *    addresses, and stopped after the file's suites.
 * 3. Otherwise the suites are registered as skipped and one line says so:
 *    "skipped: no Docker engine (...)". With CSR_REQUIRE_CONTAINERS=true (`npm run test:containers`)
 *    they fail instead, so a machine that should have Docker cannot pass without running them.
 *
 * There is no stand-in server: a suite runs against a real server or it does not run.
 */

export const EVENTSTORE_IMAGE = 'eventstore/eventstore:24.10';
export const MONGO_IMAGE = 'mongo:7';

export const SKIP_LINE =
  'skipped: no Docker engine (EventStoreDB and MongoDB contract suites; set EVENTSTORE_URL and MONGODB_URL or run with Docker)';

export type Backend =
  | {
      status: 'ready';
      url: string;
      source: 'env' | 'container';
      stop(): Promise<void>;
      /** Containers only: restarts the server in place (same address, data kept). */
      restart?: () => Promise<void>;
    }
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; reason: string };

const DOCKER_PROBE_TIMEOUT_MS = 5_000;
/** How long a started container may take to accept work, and how long a configured server gets. */
const READY_TIMEOUT_MS = { container: 60_000, env: 15_000 } as const;

function requireContainers(): boolean {
  return process.env.CSR_REQUIRE_CONTAINERS === 'true';
}

function envUrl(name: 'EVENTSTORE_URL' | 'MONGODB_URL'): string | null {
  const value = process.env[name];
  return value !== undefined && value.trim() !== '' ? value.trim() : null;
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

let dockerProbe: Promise<string | null> | null = null;

/** null when a container runtime answers, else why not. Asked once per worker, briefly. */
function dockerUnavailable(): Promise<string | null> {
  dockerProbe ??= (async () => {
    try {
      const { getContainerRuntimeClient } = await import('testcontainers');
      await withTimeout(getContainerRuntimeClient(), DOCKER_PROBE_TIMEOUT_MS, 'the Docker engine');
      return null;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  })();
  return dockerProbe;
}


async function until(ready: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      if (await ready()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${what} was not ready within ${ms} ms${last instanceof Error ? `: ${last.message}` : ''}`);
}

async function eventStoreReady(url: string, timeoutMs: number): Promise<void> {
  const { EventStoreDBClient } = await import('@eventstore/db-client');
  const client = EventStoreDBClient.connectionString(url);
  try {
    await until(
      async () => {
        for await (const _ of client.readAll({ maxCount: 1, requiresLeader: true })) break;
        return true;
      },
      timeoutMs,
      `EventStoreDB at ${url}`,
    );
  } finally {
    await client.dispose();
  }
}

async function mongoReady(url: string, timeoutMs: number): Promise<void> {
  const { MongoClient } = await import('mongodb');
  await until(
    async () => {
      // A fresh client per attempt: a client whose first connection failed stays closed.
      const client = new MongoClient(url, { serverSelectionTimeoutMS: 2_000 });
      try {
        const hello = await client.db('admin').command({ hello: 1 });
        if (!hello.setName) throw new Error('MongoDB is not a replica set member (transactions need one: --replSet)');
        return hello.isWritablePrimary === true;
      } finally {
        await client.close();
      }
    },
    timeoutMs,
    `MongoDB at ${url}`,
  );
}

async function resolveBackend(
  name: 'EventStoreDB' | 'MongoDB',
  fromEnv: string | null,
  ready: (url: string, timeoutMs: number) => Promise<void>,
  start: () => Promise<{ url: string; stop(): Promise<void>; restart(): Promise<void> }>,
): Promise<Backend> {
  if (fromEnv !== null) {
    try {
      await ready(fromEnv, READY_TIMEOUT_MS.env);
      return { status: 'ready', url: fromEnv, source: 'env', stop: async () => undefined };
    } catch (error) {
      return { status: 'failed', reason: `${name} from the environment is not usable: ${(error as Error).message}` };
    }
  }
  const noDocker = await dockerUnavailable();
  if (noDocker !== null) {
    if (requireContainers()) {
      return { status: 'failed', reason: `CSR_REQUIRE_CONTAINERS=true but no Docker engine answered (${noDocker})` };
    }
    return { status: 'skipped', reason: SKIP_LINE };
  }
  let started: { url: string; stop(): Promise<void>; restart(): Promise<void> } | null = null;
  try {
    started = await start();
    const { url } = started;
    await ready(url, READY_TIMEOUT_MS.container);
    const restart = started.restart;
    return {
      status: 'ready',
      url,
      source: 'container',
      stop: started.stop,
      restart: async () => {
        await restart();
        await ready(url, READY_TIMEOUT_MS.container);
      },
    };
  } catch (error) {
    await started?.stop().catch(() => undefined);
    return { status: 'failed', reason: `${name} container did not start: ${(error as Error).message}` };
  }
}

/** EventStoreDB for this test file: from EVENTSTORE_URL, a container, or skipped/failed. */
export function eventStoreBackend(): Promise<Backend> {
  return resolveBackend('EventStoreDB', envUrl('EVENTSTORE_URL'), eventStoreReady, async () => {
    const { GenericContainer, Wait } = await import('testcontainers');
    // A fixed host port, so that the address survives a restart; data on the container's disk
    // (not EVENTSTORE_MEM_DB), so that a restart keeps it.
    const hostPort = await freePort(null);
    const container = await new GenericContainer(EVENTSTORE_IMAGE)
      .withEnvironment({
        EVENTSTORE_CLUSTER_SIZE: '1',
        EVENTSTORE_INSECURE: 'true',
        EVENTSTORE_RUN_PROJECTIONS: 'None',
        EVENTSTORE_START_STANDARD_PROJECTIONS: 'false',
      })
      .withExposedPorts({ container: 2113, host: hostPort })
      .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCodeMatching((code) => code >= 200 && code < 300))
      .withStartupTimeout(120_000)
      .start();
    return {
      url: `esdb://${container.getHost()}:${hostPort}?tls=false`,
      stop: async () => {
        await container.stop();
      },
      restart: () => container.restart(),
    };
  });
}

/** MongoDB (a single-node replica set) for this test file: from MONGODB_URL, a container, or skipped/failed. */
export function mongoBackend(): Promise<Backend> {
  return resolveBackend('MongoDB', envUrl('MONGODB_URL'), mongoReady, async () => {
    const { GenericContainer, Wait } = await import('testcontainers');
    const hostPort = await freePort(null);
    const container = await new GenericContainer(MONGO_IMAGE)
      .withCommand(['--replSet', 'rs0', '--bind_ip_all'])
      .withExposedPorts({ container: 27017, host: hostPort })
      .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
      .withStartupTimeout(120_000)
      .start();
    const initiate = await container.exec([
      'mongosh',
      '--quiet',
      '--eval',
      "try { rs.status().ok } catch (e) { rs.initiate({ _id: 'rs0', members: [{ _id: 0, host: 'localhost:27017' }] }).ok }",
    ]);
    if (initiate.exitCode !== 0) {
      await container.stop();
      throw new Error(`rs.initiate failed: ${initiate.output}`);
    }
    // directConnection: the member calls itself localhost:27017, which is not reachable from here.
    return {
      url: `mongodb://${container.getHost()}:${hostPort}/?directConnection=true`,
      stop: async () => {
        await container.stop();
      },
      restart: () => container.restart(),
    };
  });
}

/**
 * Prints the skip line once per test run, however many files and workers find no Docker engine:
 * the first to claim a marker file named after the run's main process prints it.
 */
function announceSkip(line: string): void {
  const runPid = isMainThread ? process.ppid : process.pid; // forks pool: the parent runs vitest
  const marker = join(tmpdir(), `csr-contract-skip-${runPid}`);
  try {
    try {
      if (Date.now() - statSync(marker).mtimeMs > 6 * 3_600_000) unlinkSync(marker); // stale: an old run with a reused pid
    } catch {
      // no marker yet
    }
    closeSync(openSync(marker, 'wx'));
  } catch {
    return; // already announced in this run
  }
  process.stdout.write(`${line}\n`);
}

/**
 * Registers `body` (which calls a shared contract suite) against the backend: as a normal suite when
 * the server is reachable (stopping its container afterwards), as a skipped suite with the reason,
 * or as one failing test when the backend was required or configured but is not usable.
 */
export function describeBackend(title: string, backend: Backend, body: (url: string) => void): void {
  switch (backend.status) {
    case 'ready':
      describe(title, () => {
        afterAll(() => backend.stop());
        body(backend.url);
      });
      return;
    case 'skipped':
      announceSkip(backend.reason);
      describe.skipIf(true)(`${title} (${backend.reason})`, () => {
        body('unreachable://skipped');
      });
      return;
    case 'failed':
      describe(title, () => {
        it('reaches a real server', () => {
          throw new Error(backend.reason);
        });
      });
      return;
  }
}

/**
 * For a MongoDB suite (call inside its describeBackend body): one connected client for the suite,
 * and a database of its own for every store a test opens, all dropped afterwards.
 */
export function mongoDatabases(url: string): { client(): MongoClient; database(): string } {
  let client: MongoClient | undefined;
  const databases: string[] = [];
  beforeAll(async () => {
    client = new MongoClient(url);
    await client.connect();
  });
  afterAll(async () => {
    if (!client) return;
    for (const name of databases) await client.db(name).dropDatabase();
    await client.close();
  });
  return {
    client() {
      if (!client) throw new Error('the MongoDB client is connected in beforeAll; use it inside hooks and tests');
      return client;
    },
    database() {
      const name = `csr_contract_${randomUUID().replaceAll('-', '')}`;
      databases.push(name);
      return name;
    },
  };
}

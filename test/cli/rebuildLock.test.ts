import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import type { NewEvent } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { fingerprint, generateApiKey } from '../../src/setup/apiKeys.js';
import { openSqliteSetupStore } from '../../src/setup/sqlite/index.js';
import { csrTool } from '../support/cli.js';
import { repoRoot, spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';

/**
 * A `csr projections rebuild` beside a running server (issue 24): the server's projector must get
 * read.db's write lock within its busy timeout all along, the finishing step (filter rows,
 * counts, indexes) and the old generation's drop included. One transaction for the finishing
 * step held it for seconds on a large store, and back-to-back batches starved a waiting writer.
 */

const RECORDS = 80_000;
/**
 * The longest a writer beside the rebuild may wait for the lock (a server's busy timeout is 5 s):
 * well above what the short transactions take, well below what one finishing transaction took
 * at this size (docs/performance-log.md, rebuild lane).
 */
const LONGEST_WAIT_MS = 1_500;

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.kill();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A workspace and a key on a new DATA_DIR. */
async function workspaceWithKey(dir: string): Promise<{ workspaceId: string; key: string }> {
  const setup = openSqliteSetupStore({ path: join(dir, 'setup.db') });
  const workspaceId = randomUUID();
  const now = new Date().toISOString();
  await setup.createWorkspace({ id: workspaceId, slug: `lock-${workspaceId.slice(0, 8)}`, name: 'Lock', createdAt: now });
  const key = generateApiKey();
  await setup.createKey({ id: randomUUID(), workspaceId, name: 'lock', fingerprint: fingerprint(key), access: 'read-write', objects: 'all', createdAt: now, lastUsedAt: null, revokedAt: null });
  await setup.close();
  return { workspaceId, key };
}

/** Many clients written to the log directly (group-committed), faster than through the API. */
async function writeClients(dir: string, workspaceId: string): Promise<void> {
  const events = openSqliteEventStore({ path: join(dir, 'events.db') });
  const actor = { type: 'system' as const, id: 'test', name: 'test' };
  for (let written = 0; written < RECORDS; ) {
    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < 500 && written < RECORDS; i++, written++) {
      const recordId = randomUUID();
      const actionId = randomUUID();
      const event: NewEvent = {
        id: randomUUID(),
        type: 'RecordCreated',
        data: { schemaVersion: 1, workspaceId, object: 'clients', recordId, fields: { name: `Client ${written}`, tier: written % 2 ? 'SMB' : 'Enterprise' } },
        metadata: { source: 'api', actor, actionId, correlationId: actionId, causationId: actionId },
      };
      appends.push(events.append(recordStream(recordId), [event], { expectedRevision: 'no_stream' }));
    }
    await Promise.all(appends);
  }
  await events.close();
}

/** Another writer of the file, in a thread of its own: takes the write lock every few ms and keeps its longest wait. */
function lockProbe(path: string): { longestWaitMs(): Promise<number> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.driver).then(({ Sqlite }) => {
      const db = new Sqlite(workerData.path, { timeout: 60000 });
      let longest = 0;
      let stop = false;
      parentPort.on('message', () => (stop = true));
      const probe = () => {
        if (stop) {
          db.close();
          parentPort.postMessage(longest);
          return;
        }
        const started = performance.now();
        db.exec('BEGIN IMMEDIATE');
        db.exec('COMMIT');
        longest = Math.max(longest, performance.now() - started);
        setTimeout(probe, 5);
      };
      probe();
    });`,
    { eval: true, workerData: { path, driver: pathToFileURL(join(repoRoot, 'dist', 'src', 'sqlite', 'driver.js')).href } },
  );
  return {
    longestWaitMs: () =>
      new Promise<number>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.postMessage('stop');
      }).finally(() => worker.terminate()),
  };
}

it('a server beside a CLI rebuild of a large store keeps projecting: no error, read-your-writes, the write lock never held for long', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'csr-rebuild-lock-'));
  dirs.push(dir);
  const { workspaceId, key } = await workspaceWithKey(dir);
  await writeClients(dir, workspaceId);
  const running = await spawnServer({ DATA_DIR: dir });
  servers.push(running);
  const api = client(running.url, key);
  const csr = csrTool(dir);
  type Row = { name: string; state: string; generation: number; lagEvents: number; lastError: string | null };
  const records = async () => (await csr.json<{ projections: Row[] }>('projections', 'status')).projections.find((row) => row.name === 'records')!;
  const total = async () => (await api.get('/api/v1/clients?limit=1')).body.total as number;
  const until = async (done: () => Promise<boolean>) => {
    const deadline = Date.now() + 180_000;
    while (!(await done()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 500));
  };
  // The server projects the log it found first.
  await until(async () => (await total()) === RECORDS);
  expect(await total()).toBe(RECORDS);

  const probe = lockProbe(join(dir, 'read.db'));
  let stop = false;
  const failures: string[] = [];
  let written = 0;
  const writer = async () => {
    while (!stop) {
      const created = await api.post('/api/v1/clients', { name: `during ${written}`, tier: 'SMB' });
      if (created.status !== 201) {
        failures.push(`POST ${created.status} ${JSON.stringify(created.body)}`);
        continue;
      }
      const read = await api.get(`/api/v1/clients/${created.body.ids[0]}`);
      if (read.status !== 200) failures.push(`GET after POST ${read.status}`);
      written++;
    }
  };
  const load = writer();
  const rebuild = await csr.run('projections', 'rebuild', 'records', '--json');
  stop = true;
  await load;
  const longest = await probe.longestWaitMs();

  expect(rebuild.code, rebuild.stderr).toBe(0);
  expect(JSON.parse(rebuild.stdout)).toMatchObject({ projection: 'records', generation: 2 });
  expect(failures).toEqual([]);
  expect(written).toBeGreaterThan(0);
  expect(longest).toBeLessThan(LONGEST_WAIT_MS);
  await until(async () => (await records()).state === 'live');
  expect(await records()).toMatchObject({ state: 'live', generation: 2, lastError: null });
  expect(await total()).toBe(RECORDS + written);
}, 300_000);

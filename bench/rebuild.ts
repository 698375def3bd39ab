import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './servers.js';
import { fileURLToPath } from 'node:url';
import { eventsUpTo } from '../projections/logRange.js';
import { recordProjection as recordProjectionOf } from '../projections/recordProjection.js';
import { Catalogues } from '../src/setup/catalogues.js';
import { rebuildReadModel } from '../projections/rebuild.js';
import { openSqliteEventStore } from '../src/eventstore/sqlite/index.js';
import { openSqliteReadStore } from '../src/readstore/sqlite/index.js';
import { fingerprint, generateApiKey } from '../src/setup/apiKeys.js';
import { openSqliteSetupStore } from '../src/setup/sqlite/index.js';
import { copyFloorMs } from './rebuildFloor.js';
import { projectToHead, rate, writeLog } from './rebuildLog.js';
import { wrk } from './wrk.js';

/**
 * Rebuild speed (issue 24): a log of BENCH_REBUILD_EVENTS record events (clients, their invoices,
 * two lines each: roll-ups included) read raw, then projected by the live runner, then rebuilt
 * blue/green by `rebuildReadModel`; and GET p99 of a server on that store without and during a
 * `csr projections rebuild`. `npm run bench` runs it (BENCH_ONLY=rebuild for this part alone).
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const EVENTS = Number(process.env['BENCH_REBUILD_EVENTS'] ?? 200_000);
const WORKSPACE = randomUUID();
const GET_SECONDS = Number(process.env['BENCH_DURATION'] ?? 10);

export interface BenchRow {
  scenario: string;
  result: string;
  target: string;
}

export async function rebuildBench(options: { withServer?: boolean } = {}): Promise<BenchRow[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-rebuild-'));
  const rows: BenchRow[] = [];
  try {
    const events = openSqliteEventStore({ path: join(dataDir, 'events.db') });
    const readStore = openSqliteReadStore({ path: join(dataDir, 'read.db') });
    const clientIds = await writeLog(events, WORKSPACE, EVENTS);
    const catalogues = new Catalogues(events);
    await catalogues.watch();
    const recordProjection = recordProjectionOf(catalogues);
    const head = (await events.headPosition())!;

    let started = performance.now();
    let count = 0;
    for await (const _ of eventsUpTo(events, null, recordProjection.filter, head)) count++;
    const rawRate = rate(count, performance.now() - started);
    rows.push({ scenario: `raw log read, ${count} events`, result: `${rawRate} events/s`, target: '-' });

    const liveMs = await projectToHead(events, readStore, recordProjection);
    rows.push({ scenario: `live projector from empty, ${count} events`, result: `${rate(count, liveMs)} events/s`, target: '-' });

    started = performance.now();
    const result = await rebuildReadModel({ events, readStore }, recordProjection);
    const rebuildRate = rate(result.events, performance.now() - started);
    rows.push({
      scenario: `blue/green rebuild, ${result.events} events`,
      result: `${rebuildRate} events/s (${Math.round((100 * rebuildRate) / rawRate)}% of raw read)`,
      target: '>= 50% of raw read',
    });
    const floorMs = copyFloorMs(join(dataDir, 'read.db'), join(dataDir, 'floor.db'));
    rows.push({
      scenario: 'floor: the rebuilt rows and indexes copied by SQLite alone',
      result: `${(floorMs / 1000).toFixed(2)} s, ${rate(result.events, floorMs)} events/s (${Math.round((100 * rate(result.events, floorMs)) / rawRate)}% of raw read)`,
      target: '-',
    });
    await catalogues.close();
    await readStore.close();
    await events.close();
    if (options.withServer !== false) rows.push(...(await getDuringRebuild(dataDir, clientIds[0]!)));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

/** GET p99 of a server on the store, then again while `csr projections rebuild records` runs. */
async function getDuringRebuild(dataDir: string, clientId: string): Promise<BenchRow[]> {
  const setup = openSqliteSetupStore({ path: join(dataDir, 'setup.db') });
  await setup.createWorkspace({ id: WORKSPACE, slug: 'bench-rebuild', name: 'bench', createdAt: new Date().toISOString() });
  const key = generateApiKey();
  await setup.createKey({
    id: randomUUID(), workspaceId: WORKSPACE, name: 'bench', fingerprint: fingerprint(key), access: 'read-only', objects: 'all',
    createdAt: new Date().toISOString(), lastUsedAt: null, revokedAt: null,
  });
  await setup.close();
  const port = await freePort();
  const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  const server = spawn(process.execPath, ['dist/src/main.js'], { cwd: root, env: { ...env, PORT: String(port) }, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let ready = false; !ready; ) ready = await fetch(`${url}/health/live`).then((r) => r.ok, () => false);
    const load = { url: `${url}/api/v1/clients/${clientId}`, connections: 32, durationS: GET_SECONDS, headers: { authorization: `Bearer ${key}` } };
    await wrk({ ...load, durationS: 3 });
    const quiet = await wrk(load);
    const started = performance.now();
    const rebuild = spawn(process.execPath, ['bin/csr', 'projections', 'rebuild', 'records', '--json'], { cwd: root, env, stdio: ['ignore', 'ignore', 'ignore'] });
    const finished = new Promise<number | null>((resolve) => rebuild.once('exit', resolve));
    const during = await wrk(load);
    const code = await finished;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const row = (result: typeof quiet) =>
      `${Math.round(result.requestsPerSecond)} req/s, p99 ${result.p99Ms.toFixed(1)} ms, ${result.failures} failed`;
    return [
      { scenario: `GET one record, ${GET_SECONDS} s, no rebuild`, result: row(quiet), target: '-' },
      { scenario: `GET one record, ${GET_SECONDS} s, during a rebuild (CLI, ${seconds} s, exit ${code})`, result: row(during), target: '0 failed' },
    ];
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
  }
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await rebuildBench({ withServer: process.env['BENCH_REBUILD_GET'] !== 'off' })) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
  process.exit(0);
}

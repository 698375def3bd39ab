import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { recordStream } from '../src/events/records.js';
import { RECORDS_PROJECTION } from '../src/readstore/port.js';
import { loadConfig } from '../src/config.js';
import { startService } from '../src/service.js';
import { Sqlite } from '../src/sqlite/driver.js';
import { auditBench } from './audit.js';
import { csr, httpBenchmarks, WEBHOOK_ENV } from './http.js';
import { appendCostBench } from './appendCost.js';
import { upsertCostBench } from './upsertCost.js';
import { readStoreCostBench } from './readStoreCost.js';
import { readStoreInstructionsBench } from './readStoreInstructions.js';
import { createCostBench } from './createCost.js';
import { faultsBench } from './faults.js';
import { feedBench } from './feed.js';
import { importBench } from './importRate.js';
import { rebuildBench } from './rebuild.js';
import { postgresRebuildBench } from './rebuildPostgres.js';
import { CONNECTIONS, percentile, type TextRow } from './measure.js';
import { root, spawnServer, stop } from './servers.js';
import { postgresReachable, postgresVersion } from './postgres.js';
import { httpTable, type HttpRow, type Scenario } from './table.js';
import { startBenchReceiver, webhookLatency, webhookThroughput, type BenchReceiver, type WebhookBenchDeps } from './webhooks.js';

/**
 * npm run bench: every server in its own process, 32 connections, embedded store; bare Hono (the
 * HTTP ceiling) and Emmett (the peer a user would pick instead) measured in the same run. Prints
 * the HTTP table (with each row's share of bare Hono and its ratio to Emmett) and a table of the
 * rest (loading, projection lag, webhooks). Method and figures: docs/performance.md.
 *
 * BENCH_ONLY: a comma-separated list of http, postgres (its HTTP scenarios and its rebuild; pgrebuild: the rebuild alone), lag, webhooks, feed, faults, import, audit, rebuild, or the HTTP scenarios post, get, list
 * (only those, on the full store only), or cost (a create's CPU by stage and thread, createCost.ts; only when named), or append (the
 * embedded log's CPU per create alone, appendCost.ts, BENCH_APPEND_AGAINST=<checkout> beside another build; only when named), or upsert
 * (1,000-record upserts alone, upsertCost.ts, BENCH_UPSERT_AGAINST=<checkout> alternating with another build; only when named), or readstore
 * (the embedded read store's writes and lists alone, readStoreCost.ts, BENCH_READSTORE_AGAINST=<checkout>; only when named), or instructions
 * (the instructions of the read store's writes, counted by valgrind, readStoreInstructions.ts, BENCH_INSTRUCTIONS_AGAINST=<checkout>; only when
 * named); BENCH_PEER=false leaves Emmett out; BENCH_API_PROCESSES
 * (default 1,2); BENCH_DURATION, BENCH_WARMUP (s); BENCH_RECORDS; BENCH_PROFILE=<dir>.
 */

const DURATION_S = Number(process.env['BENCH_DURATION'] ?? 10);
const WARMUP_S = Number(process.env['BENCH_WARMUP'] ?? 5);
const LIST_RECORDS = Number(process.env['BENCH_RECORDS'] ?? 100_000);
const SCENARIO_NAMES: Record<string, Scenario> = { post: 'POST one record', get: 'GET one record', list: 'GET list' };

const only = new Set((process.env['BENCH_ONLY'] ?? '').split(',').map((token) => token.trim()).filter(Boolean));
for (const token of only) if (!['http', 'postgres', 'pgrebuild', 'lag', 'webhooks', 'feed', 'faults', 'import', 'audit', 'rebuild', 'cost', 'append', 'upsert', 'readstore', 'instructions', ...Object.keys(SCENARIO_NAMES)].includes(token)) throw new Error(`BENCH_ONLY: unknown '${token}' (http, postgres, pgrebuild, lag, webhooks, feed, faults, import, audit, rebuild, cost, append, upsert, readstore, instructions, post, get, list)`);
const chosenScenarios = Object.keys(SCENARIO_NAMES).filter((name) => only.has(name));
const runs = (section: string) => only.size === 0 || only.has(section) || (section === 'http' && chosenScenarios.length > 0);
/** Optional sections: run only when named. */
const named = (section: string) => only.has(section);

const rows: TextRow[] = [];
let httpRows: HttpRow[] = [];
let peerVersion: string | null = null;
let postgresPeerVersion: string | null = null;

/** Commit-to-visible: from an append's acknowledgement to the projection checkpoint passing it, at 200 changes/s. */
async function projectionLag(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-lag-'));
  const service = await startService(loadConfig({ DATA_DIR: dataDir, ROLES: 'projector' }), pino({ level: 'warn' }));
  const { events, readStore } = service.backends;
  const lags: number[] = [];
  const pending: Promise<void>[] = [];
  const metadata = { source: 'api' as const, actor: { type: 'system' as const, id: 'bench', name: 'bench' }, actionId: randomUUID(), correlationId: randomUUID(), causationId: randomUUID() };
  const changes = 200 * DURATION_S;
  for (let i = 0; i < changes; i++) {
    const recordId = randomUUID();
    pending.push(
      (async () => {
        const { position } = await events.append(
          recordStream(recordId),
          [{ id: randomUUID(), type: 'RecordCreated', data: { schemaVersion: 1, workspaceId: 'bench', object: 'clients', recordId, fields: { name: `Lag ${i}` } }, metadata }],
          { expectedRevision: 'no_stream' },
        );
        const committed = performance.now();
        await readStore.waitForCheckpoint(RECORDS_PROJECTION, position, 10_000);
        lags.push(performance.now() - committed);
      })(),
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(pending);
  rows.push({
    scenario: `commit-to-visible projection lag (${changes} changes at 200/s)`,
    result: `p50 ${percentile(lags, 50).toFixed(1)} ms, p99 ${percentile(lags, 99).toFixed(1)} ms`,
    target: 'p99 <= 20 ms',
  });
  await service.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

/** The bench's view of one service: workspaces with webhooks to the receiver, and record writes. */
function benchDeps(dataDir: string, receiver: BenchReceiver, apiUrl: string, withDispatcherAfter: WebhookBenchDeps['withDispatcherAfter']): WebhookBenchDeps {
  let workspaces = 0;
  return {
    receiver,
    withDispatcherAfter,
    async workspaceWithWebhooks(paths) {
      const slug = `hooks-${workspaces++}`;
      csr(dataDir, 'workspaces', 'create', slug);
      for (const path of paths) csr(dataDir, 'webhooks', 'create', '--workspace', slug, '--name', path, '--url', `${receiver.origin}${path}`);
      return csr(dataDir, 'keys', 'create', '--workspace', slug, '--name', 'bench').key as string;
    },
    async post(key, body) {
      const response = await fetch(`${apiUrl}/api/v1/tasks`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (response.status !== 201) throw new Error(`webhook bench load failed: ${response.status} ${(await response.text()).slice(0, 300)}`);
    },
  };
}

/** Webhooks end to end: services in their own processes, a local HTTPS receiver here. */
async function webhookBench(): Promise<void> {
  const receiver = await startBenchReceiver();

  // Throughput: the changes are written first (api + projector), then a dispatcher process starts.
  const splitDir = mkdtempSync(join(tmpdir(), 'csr-bench-webhooks-'));
  const writer = await spawnServer('dist/src/main.js', { DATA_DIR: splitDir, ROLES: 'api,projector', ...WEBHOOK_ENV });
  let dispatcher: ChildProcess | null = null;
  rows.push(
    ...(await webhookThroughput(
      benchDeps(splitDir, receiver, writer.url, async (work) => {
        if (dispatcher) await stop(dispatcher);
        await work();
        const started = Date.now();
        dispatcher = spawn(process.execPath, ['dist/src/main.js'], { cwd: root, env: { ...process.env, DATA_DIR: splitDir, ROLES: 'dispatcher', LOG_LEVEL: 'warn', ...WEBHOOK_ENV }, stdio: ['ignore', 'ignore', 'inherit'] });
        return started;
      }),
    )),
  );
  if (dispatcher) await stop(dispatcher);
  await stop(writer.child);
  rmSync(splitDir, { recursive: true, force: true });

  // Latency: one process with every role, as `npm start` runs it.
  const allDir = mkdtempSync(join(tmpdir(), 'csr-bench-webhooks-'));
  const server = await spawnServer('dist/src/main.js', { DATA_DIR: allDir, ...WEBHOOK_ENV });
  rows.push(...(await webhookLatency(benchDeps(allDir, receiver, server.url, async (work) => (await work(), Date.now())), DURATION_S)));
  await stop(server.child);
  receiver.close();
  rmSync(allDir, { recursive: true, force: true });
}

if (runs('http')) {
  const result = await httpBenchmarks({
    scenarios: new Set(chosenScenarios.length > 0 ? chosenScenarios.map((name) => SCENARIO_NAMES[name]!) : Object.values(SCENARIO_NAMES)),
    peer: process.env['BENCH_PEER'] !== 'false',
    processes: (process.env['BENCH_API_PROCESSES'] ?? '1,2').split(',').map(Number),
    // The full bench first measures single records on a 10k store (the records API's own target),
    // then everything on the full store; a chosen scenario runs on the full store only.
    stages: chosenScenarios.length === 0 && LIST_RECORDS > 10_000 ? [10_000, LIST_RECORDS] : [LIST_RECORDS],
    durationS: DURATION_S,
    warmUpS: WARMUP_S,
    backend: 'embedded',
  });
  httpRows = result.rows;
  rows.push(...result.textRows);
  peerVersion = result.peerVersion;
}
if (runs('postgres')) {
  const reachable = await postgresReachable();
  if (reachable === true) {
    // The service on PostgreSQL beside Emmett on PostgreSQL: the same three scenarios on the full store, one API process.
    const result = await httpBenchmarks({
      scenarios: new Set(chosenScenarios.length > 0 ? chosenScenarios.map((name) => SCENARIO_NAMES[name]!) : Object.values(SCENARIO_NAMES)),
      peer: process.env['BENCH_PEER'] !== 'false',
      processes: [1],
      stages: [LIST_RECORDS],
      durationS: DURATION_S,
      warmUpS: WARMUP_S,
      backend: 'postgres',
    });
    httpRows.push(...result.rows);
    rows.push(...result.textRows.filter((row) => !row.scenario.startsWith('bare Hono')));
    postgresPeerVersion = result.peerVersion;
  } else {
    rows.push({ scenario: 'PostgreSQL backend', result: `skipped: ${reachable}`, target: '' });
  }
}
if (runs('postgres') || named('pgrebuild')) rows.push(...(await postgresRebuildBench()));
if (runs('lag')) await projectionLag();
if (runs('webhooks')) await webhookBench();
if (runs('feed')) rows.push(...(await feedBench()));
if (runs('faults')) rows.push(...(await faultsBench()));
if (runs('import')) rows.push(...(await importBench({ durationS: DURATION_S, warmUpS: WARMUP_S })));
if (runs('audit')) rows.push(...(await auditBench(root)));
if (runs('rebuild')) rows.push(...(await rebuildBench()));
if (named('cost')) rows.push(...(await createCostBench()));
if (named('append')) rows.push(...(await appendCostBench()));
if (named('upsert')) rows.push(...(await upsertCostBench()));
if (named('readstore')) rows.push(...(await readStoreCostBench()));
if (named('instructions')) rows.push(...(await readStoreInstructionsBench()));

/** Node 20 and Node 22.14+/24 load different better-sqlite3 majors, with different SQLite releases and planners. */
const sqliteVersion = (new Sqlite(':memory:').prepare('SELECT sqlite_version() AS version').get() as { version: string }).version;
console.log(`\nnode ${process.version}, ${CONNECTIONS} connections, ${DURATION_S} s per HTTP scenario after ${WARMUP_S} s of warm-up, embedded store (SQLite ${sqliteVersion}, synchronous=FULL)${peerVersion ? `; peer: ${peerVersion}, inline projection` : ''}${postgresPeerVersion ? `; PostgreSQL rows: ${await postgresVersion()}, peer ${postgresPeerVersion}, inline projection` : ''}\n`);
if (httpRows.length > 0) console.log(`${httpTable(httpRows)}\n`);
console.log('| scenario | result | target |\n|---|---|---|');
for (const row of rows) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
process.exit(0);

import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { installPeer, startPeer, startPgPeer } from './peer.js';
import { benchDatabase, databaseCpu, type BenchDatabase } from './postgres.js';
import { root, spawnServer, stop, type Server } from './servers.js';
import { commitMs, load, percentile, perSecond, type TextRow } from './measure.js';
import type { HttpRow, Measured, Scenario } from './table.js';
import type { LoadOptions } from './wrk.js';
import { BENCH_CA_FILE } from './webhooks.js';

/**
 * The HTTP scenarios: POST one record, GET one record, and a list (limit=100, one filter, with
 * its total), on this service (with one and two API processes) and on the Emmett peer, each
 * server alone under load and each seeded through its own API with the same records. Every
 * scenario's run follows an unmeasured warm-up of the same load (a fresh server's V8 is still
 * compiling its hot paths for several seconds: POST spent 16% more instructions per request 2 s
 * after start than 15 s after) and a short run of the bare Hono endpoint, its baseline.
 */

export interface HttpOptions {
  scenarios: Set<Scenario>;
  peer: boolean;
  processes: number[];
  /** Records loaded before each stage's scenarios; the list runs in the last stage only. */
  stages: number[];
  durationS: number;
  warmUpS: number;
  /**
   * 'embedded': the service on SQLite files beside Emmett on emmett-sqlite; 'postgres': the service
   * with DATABASE_URL beside Emmett on emmett-postgresql, each on a fresh database of the same server.
   */
  backend: 'embedded' | 'postgres';
}

/** The bare run just before a scenario: long enough for a steady rate, short enough to repeat. */
const BASELINE_S = 3;
/**
 * The first upserts of each fresh loading server are timed apart, as the HTTP scenarios' warm-up
 * is: its V8 is still compiling. On one day the first took 155-279 ms, the second 95-157, the fifth
 * 74-94, and those after p50 62-67; two cold starts among 100 upserts made their p99.
 */
const WARMUP_UPSERTS = 5;
/** The industries the bench's clients take in turn: the list scenario's filter matches a tenth of them. */
export const INDUSTRIES = ['Retail', 'Tech', 'Health', 'Finance', 'Energy', 'Media', 'Travel', 'Food', 'Auto', 'Legal'];
const LIST_PATH = '/api/v1/clients?industry=retail&limit=100';
/** Requests in flight per connection in the pipelined GET scenario. */
const PIPELINE = 16;

/** The bench receiver is on loopback with a self-signed certificate. */
export const WEBHOOK_ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: BENCH_CA_FILE };

export function csr(dataDir: string, ...args: string[]): any {
  return csrOn({ DATA_DIR: dataDir }, ...args);
}

/** `csr ... --json` with the store chosen by `storeEnv` (DATA_DIR, or DATABASE_URL and its master key). */
export function csrOn(storeEnv: Record<string, string>, ...args: string[]): any {
  return csrOf(root, storeEnv, ...args);
}

/** csrOn with the `csr` of another built checkout (a build compared with this one). */
export function csrOf(checkout: string, storeEnv: Record<string, string>, ...args: string[]): any {
  return JSON.parse(execFileSync(process.execPath, ['bin/csr', ...args, '--json'], { cwd: checkout, env: { ...process.env, ...storeEnv, ...WEBHOOK_ENV }, encoding: 'utf8' }));
}

type Method = 'GET' | 'POST';

/**
 * Waits (at most CATCH_UP_MS) until every projection and reactor has applied the log, as
 * `csr projections status` tells: a load leaves the webhook fan-out, which no request waits for,
 * behind by every event it wrote, and the first scenario's CPU per request would count that work.
 */
async function caughtUp(storeEnv: Record<string, string>): Promise<void> {
  const deadline = Date.now() + CATCH_UP_MS;
  for (;;) {
    const behind = (csrOn(storeEnv, 'projections', 'status') as { projections: { name: string; lagEvents: number }[] }).projections.filter((projection) => projection.lagEvents > 0);
    if (behind.length === 0) return;
    if (Date.now() > deadline) {
      console.error(`bench: still behind after ${CATCH_UP_MS / 1000} s, measuring anyway: ${behind.map((projection) => `${projection.name} ${projection.lagEvents}`).join(', ')}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

const CATCH_UP_MS = 300_000;

/** One server's records, loaded through its API in 1,000-record requests (the same records for every server). */
interface Loaded {
  ids: string[];
  idsFile: string;
  headers: Record<string, string>;
  upsertMs: number[];
  warmUpUpsertMs: number[];
}

async function loadUpTo(loaded: Loaded, records: number, start: () => Promise<Server>): Promise<void> {
  const loader = await start();
  const firstBatch = loaded.ids.length / 1000;
  for (let batch = firstBatch; batch < records / 1000; batch++) {
    const batchRecords = Array.from({ length: 1000 }, (_, i) => ({ name: `Loaded ${batch}-${i}`, industry: INDUSTRIES[(batch * 1000 + i) % INDUSTRIES.length], arr: i }));
    const started = performance.now();
    const response = await fetch(`${loader.url}/api/v1/clients`, { method: 'POST', headers: loaded.headers, body: JSON.stringify(batchRecords) });
    (batch - firstBatch < WARMUP_UPSERTS ? loaded.warmUpUpsertMs : loaded.upsertMs).push(performance.now() - started);
    const body = (await response.json()) as { ids: string[] };
    if (response.status !== 201) throw new Error(`load failed: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    loaded.ids.push(...body.ids);
  }
  await stop(loader.child);
  writeFileSync(loaded.idsFile, loaded.ids.join('\n'));
}

function meanOf(a: Measured, b: Measured): Measured {
  const mean = (x: number, y: number) => (x + y) / 2;
  return {
    requests: a.requests + b.requests,
    requestsPerSecond: mean(a.requestsPerSecond, b.requestsPerSecond),
    p99Ms: Math.max(a.p99Ms, b.p99Ms),
    failures: a.failures + b.failures,
    cpuUs: a.cpuUs === null || b.cpuUs === null ? null : mean(a.cpuUs, b.cpuUs),
  };
}

export async function httpBenchmarks(options: HttpOptions): Promise<{ rows: HttpRow[]; textRows: TextRow[]; peerVersion: string | null }> {
  const rows: HttpRow[] = [];
  const textRows: TextRow[] = [];
  const bare = await spawnServer('dist/bench/bareHono.js', {});
  const measureBare = (method: Method, durationS: number, pipeline = 1) =>
    load(`bare ${method}`, bare.child, {
      url: `${bare.url}/json`,
      durationS,
      pipeline,
      ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, request: `request = function() return wrk.format("POST", "/json", nil, '{"name":"Acme"}') end` } : {}),
    });
  textRows.push({ scenario: 'bare Hono GET (baseline)', result: perSecond(await measureBare('GET', options.durationS)), target: '' });
  textRows.push({ scenario: 'bare Hono POST (baseline)', result: perSecond(await measureBare('POST', options.durationS)), target: '' });

  /**
   * A scenario's measured load, after its warm-up, between two runs of the bare endpoint: their
   * mean is its baseline, so a change of the machine's speed during the scenario is half in it.
   */
  const measure = async (method: Method, title: string, server: ChildProcess, database: BenchDatabase | null, loadOptions: (run: 'warm-up' | 'measured') => Omit<LoadOptions, 'connections' | 'durationS'>) => {
    if (options.warmUpS > 0) await load(`${title} (warm-up)`, server, { ...loadOptions('warm-up'), durationS: options.warmUpS });
    const pipeline = loadOptions('measured').pipeline ?? 1;
    const before = await measureBare(method, BASELINE_S, pipeline);
    const commit = method === 'POST' ? commitMs() : null;
    const serverCpu = database ? await databaseCpu(database.url) : null;
    const loaded = await load(title, server, { ...loadOptions('measured'), durationS: options.durationS });
    // Only on PostgreSQL: on the embedded store there is no database server to count (no `+` in the table).
    let measured: Measured = loaded;
    if (serverCpu) {
      const serverMs = await serverCpu();
      measured = { ...loaded, serverCpuUs: serverMs === null || loaded.requests === 0 ? null : (serverMs * 1000) / loaded.requests };
    }
    return { measured, baseline: meanOf(before, await measureBare(method, BASELINE_S, pipeline)), commitMs: commit };
  };

  /** The scenarios of one stage on one running server. */
  const scenarios = async (server: Server, row: Pick<HttpRow, 'server' | 'processes' | 'stage'>, loaded: Loaded, withList: boolean) => {
    const title = `${row.server}, API_PROCESSES=${row.processes}, ${row.stage}`;
    // On PostgreSQL a request's work is split between the server under test and the database
    // server: both are counted, the database server's in the database of the server under test.
    const database = onPostgres ? databases[row.server === 'Emmett' ? 1 : 0]! : null;
    const push = (scenario: Scenario, result: Omit<HttpRow, 'scenario' | 'server' | 'processes' | 'stage' | 'backend'>) => rows.push({ scenario, backend: options.backend, ...row, ...result });
    if (options.scenarios.has('POST one record')) {
      const tag = `${row.stage} ${row.processes}`;
      const result = await measure('POST', `POST one, ${title}`, server.child, database, (run) => ({
        url: server.url,
        headers: loaded.headers,
        prelude: 'counter = 0',
        request: `request = function()
          counter = counter + 1
          return wrk.format("POST", "/api/v1/clients", nil, '{"name":"Single ${tag} ${run}-' .. counter .. '","industry":"Bench"}')
        end`,
      }));
      push('POST one record', result);
    }
    if (options.scenarios.has('GET one record')) {
      const getOne = (pipeline: number) => () => ({
        url: server.url,
        headers: loaded.headers,
        prelude: `ids = {} for line in io.lines(${JSON.stringify(loaded.idsFile)}) do ids[#ids + 1] = line end`,
        request: 'request = function() return wrk.format("GET", "/api/v1/clients/" .. ids[math.random(#ids)]) end',
        pipeline,
      });
      push('GET one record', await measure('GET', `GET one, ${title}`, server.child, database, getOne(1)));
      if (row.server === 'this service' && options.processes.length > 1) {
        push('GET one record, pipelined', await measure('GET', `GET one pipelined, ${title}`, server.child, database, getOne(PIPELINE)));
      }
    }
    if (withList && options.scenarios.has('GET list')) {
      const total = ((await (await fetch(`${server.url}${LIST_PATH}`, { headers: loaded.headers })).json()) as { total: number }).total;
      if (total !== loaded.ids.length / INDUSTRIES.length) throw new Error(`${row.server}: the list's total is ${total}, not ${loaded.ids.length / INDUSTRIES.length}`);
      push('GET list', await measure('GET', `list, ${title}`, server.child, database, () => ({ url: `${server.url}${LIST_PATH}`, headers: loaded.headers })));
    }
  };

  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-'));
  const databases: BenchDatabase[] = [];
  const onPostgres = options.backend === 'postgres';
  if (onPostgres) databases.push(await benchDatabase('service'), await benchDatabase('peer'));
  const masterKeyFile = join(dataDir, 'master.key');
  if (onPostgres) writeFileSync(masterKeyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  // The service's store: files in dataDir, or a database of its own (every process reads the same).
  const storeEnv: Record<string, string> = onPostgres ? { DATA_DIR: dataDir, DATABASE_URL: databases[0]!.url, MASTER_KEY_FILE: masterKeyFile } : { DATA_DIR: dataDir };
  csrOn(storeEnv, 'workspaces', 'create', 'bench');
  const key = csrOn(storeEnv, 'keys', 'create', '--workspace', 'bench', '--name', 'bench').key as string;
  const newLoaded = (name: string, token: string): Loaded => ({ ids: [], idsFile: join(dataDir, `${name}-ids.txt`), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, upsertMs: [], warmUpUpsertMs: [] });
  const service = newLoaded('service', key);
  const peerToken = randomUUID();
  const peer = newLoaded('peer', peerToken);
  const peerVersion = options.peer ? installPeer(options.backend) : null;
  const peerDb = join(dataDir, 'emmett.sqlite');
  const startThePeer = () => (onPostgres ? startPgPeer(databases[1]!.url, peerToken) : startPeer(peerDb, peerToken));

  for (const [index, records] of options.stages.entries()) {
    const withList = index === options.stages.length - 1;
    const stage = `${Math.round(records / 1000).toLocaleString('en')}k records${onPostgres ? ', PostgreSQL' : ''}`;
    await loadUpTo(service, records, () => spawnServer('dist/src/main.js', storeEnv));
    for (const processes of options.processes) {
      const server = await spawnServer('dist/src/main.js', { ...storeEnv, API_PROCESSES: String(processes) });
      await caughtUp(storeEnv);
      await scenarios(server, { server: 'this service', processes, stage }, service, withList);
      await stop(server.child);
    }
    if (options.peer) {
      await loadUpTo(peer, records, startThePeer);
      const server = await startThePeer();
      await scenarios(server, { server: 'Emmett', processes: 1, stage }, peer, withList);
      await stop(server.child);
    }
  }
  for (const [name, loaded] of [['this service', service], ['Emmett', peer]] as const) {
    if (loaded.upsertMs.length === 0) continue;
    textRows.push({
      scenario: `${name}: 1,000-record upsert (${loaded.upsertMs.length} runs, growing to ${loaded.ids.length.toLocaleString('en')} loaded records; not counted: the first ${WARMUP_UPSERTS} of each fresh server)`,
      result: `p50 ${percentile(loaded.upsertMs, 50).toFixed(0)} ms, p99 ${percentile(loaded.upsertMs, 99).toFixed(0)} ms; not counted: ${loaded.warmUpUpsertMs.map((ms) => ms.toFixed(0)).join(', ')} ms`,
      target: name === 'Emmett' || onPostgres ? '' : '<= 150 ms',
    });
  }
  await stop(bare.child);
  rmSync(dataDir, { recursive: true, force: true });
  for (const database of databases) await database.drop();
  return { rows, textRows, peerVersion };
}


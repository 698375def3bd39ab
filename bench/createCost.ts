import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadWrites, treeCpuMs } from './cpu.js';
import { csr, WEBHOOK_ENV } from './http.js';
import { CONNECTIONS, type TextRow } from './measure.js';
import { freePort, root, stop } from './servers.js';
import { splitPerf, stagesOfProfile, type Profile } from './costStages.js';
import { perfAvailable, perfTarget, recordPerf } from './perfSamples.js';
import { startBenchReceiver } from './webhooks.js';

/**
 * What a create costs, by stage and thread (issue 44): `BENCH_ONLY=cost npm run bench`, or
 * `node dist/bench/createCost.js` after a build. A server with every role (API, projector and its
 * reactors, webhook dispatcher) takes single-client POSTs from 32 connections, as the bench's
 * POST scenario does (auto number, name claim, hash chain, read your writes; the dispatcher reads
 * every event, and with BENCH_COST_WEBHOOK=true also delivers each to a webhook on a local
 * receiver).
 *
 * Each run starts two fresh servers: one plain, whose process CPU time (every thread, from /proc,
 * Linux) while the measured creates ran is what a create costs; one sampled, whose samples in that
 * window are put in the thread and stage their stack is in (costStages.ts: the deepest frame of
 * the project's own code decides). A stage's µs are its share of the samples times the plain
 * server's CPU per create (sampling costs CPU itself). CPU time, unlike a rate, says what a create
 * costs whatever else the machine runs. The table shows the median of the runs.
 *
 * The samples come from Linux `perf` where it can sample (perfSamples.ts): time on a CPU, in
 * every thread, kernel work included. Elsewhere from V8's profiler, whose samples are a thread's
 * busy wall time: a thread preempted or blocked inside a call (the commit's fsync, a SQLite step
 * while the load generator holds the other core) is counted as if it computed, which can make a
 * stage look several times its cost (docs/performance.md), and V8's helper threads are spread
 * over the stages.
 *
 * Knobs: BENCH_COST_CREATES (measured creates per run, default 6,000), BENCH_COST_WARMUP (creates
 * before, default 20,000: V8 still compiles the create's path for several seconds after a start,
 * docs/performance.md), BENCH_COST_RUNS (default 3), BENCH_COST_SPLIT=false (the total only),
 * BENCH_COST_SAMPLER=v8 (V8's profiler even where perf can sample), BENCH_COST_PROFILES=<dir> keeps
 * V8's profiles (`node dist/bench/profileTop.js <file>` lists their top frames).
 */

const CREATES = Number(process.env['BENCH_COST_CREATES'] ?? 6_000);
const WARMUP = Number(process.env['BENCH_COST_WARMUP'] ?? 20_000);
const RUNS = Number(process.env['BENCH_COST_RUNS'] ?? 3);
const WEBHOOK = process.env['BENCH_COST_WEBHOOK'] === 'true';
/** false: only the plain servers, for an A/B of the total (half the time). */
const SPLIT = process.env['BENCH_COST_SPLIT'] !== 'false';
const INTERVAL_US = 1000;
/** perf's samples per second of each thread's CPU. */
const PERF_HZ = 1000;
/** Where to keep the profiles (for profileTop.js); by default they are deleted. */
const KEEP = process.env['BENCH_COST_PROFILES'];

/** What each sampler's shares are of (the table says which split it shows). */
const SAMPLERS: Record<Exclude<Sampler, 'none'>, string> = {
  perf: "perf's CPU samples (time on a CPU, every thread, kernel work included)",
  v8: "V8's profiler (a thread's busy wall time: also while it is preempted or blocked in a call, such as an fsync)",
};

/** BENCH_COST_SAMPLER (perf or v8); by default perf where it can sample, else V8's profiler. */
function samplerToUse(): Exclude<Sampler, 'none'> {
  const asked = process.env['BENCH_COST_SAMPLER'];
  if (asked === 'v8') return 'v8';
  if (perfAvailable()) return 'perf';
  if (asked === 'perf') throw new Error('BENCH_COST_SAMPLER=perf, but `perf record` cannot sample here (install linux-perf, or lower kernel.perf_event_paranoid)');
  return 'v8';
}

/** The monotonic clock V8's profiles use, in µs. */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

interface RunResult {
  /** "thread|stage" -> µs per create. */
  stages: Map<string, number>;
  /** Thread -> bytes it passed to write calls per create (files and sockets); from perf runs, whose samples tell the threads apart (splitPerf). */
  writes: Map<string, number>;
  processUs: number | null;
}

async function post(url: string, key: string, n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const response = await fetch(`${url}/api/v1/clients`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `Cost ${Date.now()}-${i}`, industry: 'Bench' }),
      });
      if (response.status !== 201) throw new Error(`create failed: ${response.status} ${(await response.text()).slice(0, 300)}`);
      await response.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
}

/** How a run's CPU is split: not at all (the plain server), by perf's CPU samples, or by V8's profiler. */
type Sampler = 'none' | 'perf' | 'v8';

async function oneRun(receiverOrigin: string, sampler: Sampler): Promise<RunResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-cost-'));
  const profiles = sampler === 'v8' ? KEEP || mkdtempSync(join(tmpdir(), 'csr-bench-cost-prof-')) : null;
  csr(dataDir, 'workspaces', 'create', 'cost');
  if (WEBHOOK) csr(dataDir, 'webhooks', 'create', '--workspace', 'cost', '--name', 'cost', '--url', `${receiverOrigin}/cost`);
  const key = csr(dataDir, 'keys', 'create', '--workspace', 'cost', '--name', 'bench').key as string;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const target = sampler === 'perf' ? perfTarget() : null;
  const profile = profiles ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-interval=${INTERVAL_US}`] : (target?.args ?? []);
  const child = spawn(process.execPath, [...profile, join(root, 'dist/src/main.js')], {
    cwd: target?.cwd ?? root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', ...WEBHOOK_ENV },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let attempt = 0; ; attempt++) {
    try {
      await fetch(url);
      break;
    } catch {
      if (attempt > 1200 || child.exitCode !== null) throw new Error('the server did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  // From before the warm-up: perf names only the code V8 compiles while it records.
  const perf = target ? await recordPerf(child.pid!, PERF_HZ, target) : null;
  await post(url, key, WARMUP);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const cpuBefore = treeCpuMs(child.pid!);
  const writesBefore = threadWrites(child.pid!);
  const from = nowUs();
  await post(url, key, CREATES);
  // The followers (reactors, webhook deliveries) finish what the creates gave them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const to = nowUs();
  const cpuAfter = treeCpuMs(child.pid!);
  const writesAfter = threadWrites(child.pid!);
  await stop(child);
  const perfSamples = perf ? await perf.stop({ fromUs: from, toUs: to }) : null;

  const stages = new Map<string, number>();
  const writes = new Map<string, number>();
  if (perfSamples) {
    const split = splitPerf(child.pid!, perfSamples);
    for (const [name, samples] of split.stages) stages.set(name, (samples * 1e6) / PERF_HZ / CREATES);
    for (const [tid, { thread }] of split.threads) {
      const bytes = (writesAfter?.get(tid) ?? 0) - (writesBefore?.get(tid) ?? 0);
      if (bytes > 0) writes.set(thread, (writes.get(thread) ?? 0) + bytes / CREATES);
    }
  }
  if (profiles) {
    for (const file of readdirSync(profiles).filter((name) => name.endsWith('.cpuprofile'))) {
      const profile = JSON.parse(readFileSync(join(profiles, file), 'utf8')) as Profile;
      const { thread, counts } = stagesOfProfile(file, profile, from, to);
      for (const [stage, samples] of counts) {
        const name = `${thread}|${stage}`;
        stages.set(name, (stages.get(name) ?? 0) + (samples * INTERVAL_US) / CREATES);
      }
    }
    if (!KEEP) rmSync(profiles, { recursive: true, force: true });
  }
  rmSync(dataDir, { recursive: true, force: true });
  return { stages, writes, processUs: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / CREATES };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Runs RUNS pairs of servers (one unprofiled, for the process's CPU time; one profiled, for the
 * split) and prints the table; answers the summary rows for the bench's table. The profiler costs
 * CPU itself, so a stage's µs are its share of the profiled samples times the unprofiled CPU.
 */
export async function createCostBench(): Promise<TextRow[]> {
  const receiver = await startBenchReceiver();
  const plain: RunResult[] = [];
  const profiledRuns: RunResult[] = [];
  const sampler = samplerToUse();
  try {
    for (let run = 0; run < RUNS; run++) {
      plain.push(await oneRun(receiver.origin, 'none'));
      if (SPLIT) profiledRuns.push(await oneRun(receiver.origin, sampler));
    }
  } finally {
    receiver.close();
  }
  const processes = plain.map((run) => run.processUs).filter((us): us is number => us !== null);
  const total = processes.length > 0 ? median(processes) : null;
  const shares = profiledRuns.map((run) => {
    const sum = [...run.stages.values()].reduce((a, b) => a + b, 0);
    return new Map([...run.stages].map(([name, us]) => [name, us / sum]));
  });
  const names = [...new Set(profiledRuns.flatMap((run) => [...run.stages.keys()]))];
  const rows = names.map((name) => ({ name, share: median(shares.map((run) => run.get(name) ?? 0)) }));
  const byThread = new Map<string, typeof rows>();
  for (const row of rows) {
    const thread = row.name.split('|')[0]!;
    byThread.set(thread, [...(byThread.get(thread) ?? []), row]);
  }
  const us = (share: number) => (total === null ? 'n/a' : (share * total).toFixed(0));
  console.log(`\nCPU per create by stage: median of ${RUNS} runs of ${CREATES} creates after ${WARMUP}, ${CONNECTIONS} connections; split by ${SAMPLERS[sampler]}\n`);
  // What each thread wrote per create: a thread's file writes are the pages of its store's WAL (docs/performance.md, session 37).
  const written = (thread: string) => {
    const runs = profiledRuns.filter((run) => run.writes.size > 0);
    return runs.length === 0 ? '' : `${(median(runs.map((run) => run.writes.get(thread) ?? 0)) / 1024).toFixed(1)} KiB`;
  };
  console.log('| thread | stage | share of the samples | µs per create | written per create |\n|---|---|---|---|---|');
  for (const [thread, threadRows] of [...byThread].sort((a, b) => a[0].localeCompare(b[0]))) {
    for (const row of threadRows.sort((a, b) => b.share - a.share)) console.log(`| ${thread} | ${row.name.split('|')[1]} | ${(100 * row.share).toFixed(1)}% | ${us(row.share)} | |`);
    const share = threadRows.reduce((sum, row) => sum + row.share, 0);
    console.log(`| ${thread} | **all** | **${(100 * share).toFixed(1)}%** | **${us(share)}** | ${written(thread)} |`);
  }
  const whole = total === null ? 'n/a (not Linux)' : `${total.toFixed(0)} µs (runs: ${processes.map((value) => value.toFixed(0)).join(', ')})`;
  console.log(`| the process, every thread (/proc, unprofiled) | | | **${whole}** | |\n`);
  return [{ scenario: 'create: CPU per create, every thread of the process (createCost.ts)', result: whole, target: '<= 250 µs' }];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await createCostBench()) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
}

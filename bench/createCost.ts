import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { treeCpuMs } from './cpu.js';
import { csr, WEBHOOK_ENV } from './http.js';
import { CONNECTIONS, type TextRow } from './measure.js';
import { freePort, root, stop } from './servers.js';
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
 * Linux) while the measured creates ran is what a create costs; one under V8's CPU profiler, whose
 * samples in that window are put in the stage their stack is in (the deepest frame of the
 * project's own code decides, see STAGES). A sample is taken while a thread is outside its event
 * loop's wait, also while it waits inside a call (the commit's fsync counts in "append + commit"),
 * so a stage's share is of the threads' busy time; its µs are that share of the plain server's CPU
 * per create (the profiler costs CPU itself, and what no profile sees, V8's helper threads, is
 * spread over the stages with them). CPU time, unlike a rate, says what a create costs whatever
 * else the machine runs. The table shows the median of the runs.
 *
 * Knobs: BENCH_COST_CREATES (measured creates per run, default 6,000), BENCH_COST_WARMUP (creates
 * before, default 3,000), BENCH_COST_RUNS (default 3), BENCH_COST_SPLIT=false (the total only), BENCH_COST_PROFILES=<dir> keeps the profiles
 * (`node dist/bench/profileTop.js <file>` lists their top frames).
 */

const CREATES = Number(process.env['BENCH_COST_CREATES'] ?? 6_000);
const WARMUP = Number(process.env['BENCH_COST_WARMUP'] ?? 3_000);
const RUNS = Number(process.env['BENCH_COST_RUNS'] ?? 3);
const WEBHOOK = process.env['BENCH_COST_WEBHOOK'] === 'true';
/** false: only the plain servers, for an A/B of the total (half the time). */
const SPLIT = process.env['BENCH_COST_SPLIT'] !== 'false';
const INTERVAL_US = 1000;
/** Where to keep the profiles (for profileTop.js); by default they are deleted. */
const KEEP = process.env['BENCH_COST_PROFILES'];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

type Thread = 'API thread' | 'commit thread' | 'projector thread' | 'dispatcher thread' | 'other threads';

/** Where a sample's stack is, by the deepest frame of the project's code (paths under dist/). */
const STAGES: Record<Thread, [string, string][]> = {
  'API thread': [
    ['src/eventstore/chain', 'hashing (audit chain)'],
    ['src/privacy/', 'sealing (personal data)'],
    ['src/eventstore/', 'append + commit'],
    ['commands/autoNumbers', 'reservations (number, name)'],
    ['commands/reservations/', 'reservations (number, name)'],
    ['commands/create', 'reservations (number, name)'],
    ['commands/', 'validation + decide'],
    ['src/schema/', 'validation + decide'],
    ['src/readstore/', 'validation + decide'],
    ['queries/', 'answer (rendering)'],
    ['src/', 'HTTP layer (auth, body, routing, log)'],
  ],
  // The API process's appends (src/eventstore/sqlite/threadedCommitter.ts).
  'commit thread': [
    ['src/eventstore/chain', 'hashing (audit chain)'],
    ['', 'append + commit'],
  ],
  'projector thread': [
    ['projections/automation/', 'reactor: playbook automation'],
    ['projections/health', 'reactor: health score'],
    ['projections/rollup', 'reactor: roll-ups'],
    ['src/eventstore/', 'followers: read + decode the log'],
    ['projections/', 'projector (read model)'],
    ['src/readstore/', 'projector (read model)'],
    ['', 'projector (read model)'],
  ],
  'dispatcher thread': [
    ['src/eventstore/', 'followers: read + decode the log'],
    ['src/webhooks/', 'webhook fan-out and delivery'],
    ['', 'webhook fan-out and delivery'],
  ],
  'other threads': [['', 'other threads (checkpointer)']],
};

/** The stages that wrap others: a sample anywhere under them is theirs. */
const WRAPPERS: [string, string][] = [
  ['waitVisible', 'read-your-writes wait'],
  ['waitForCheckpoint', 'read-your-writes wait'],
];

/** The main thread's profile is named with thread id 0 (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile); workers by what they ran. */
function threadOf(file: string, urls: string[]): Thread {
  if (file.split('.')[4] === '0') return 'API thread';
  const has = (part: string) => urls.some((url) => url.includes(`/dist/${part}`));
  if (has('src/webhooks/')) return 'dispatcher thread';
  if (has('projections/')) return 'projector thread';
  // Followers are told apart above; what else runs the log's code commits the API's appends.
  if (has('src/eventstore/')) return 'commit thread';
  return 'other threads';
}

/** Stage -> samples in the window [from, to] (µs, the profile's monotonic clock). */
function stagesOf(file: string, profile: Profile, from: number, to: number): { thread: Thread; counts: Map<string, number> } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const inWindow: number[] = [];
  let time = profile.startTime;
  profile.samples.forEach((id, i) => {
    time += profile.timeDeltas[i] ?? 0;
    if (time >= from && time <= to) inWindow.push(id);
  });
  const thread = threadOf(file, [...new Set(inWindow)].map((id) => byId.get(id)!.callFrame.url));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stageOfNode = new Map<number, string | null>();
  const classify = (id: number): string | null => {
    const leaf = byId.get(id)!.callFrame.functionName;
    if (leaf === '(idle)' || leaf === '(root)') return null;
    if (leaf === '(garbage collector)') return 'garbage collector';
    if (leaf === '(program)') return 'V8 and native, outside JavaScript';
    const stack: ProfileNode[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at)!);
    if (thread === 'API thread') for (const node of stack) for (const [name, stage] of WRAPPERS) if (node.callFrame.functionName === name) return stage;
    for (const node of stack) {
      const { url } = node.callFrame;
      const at = url.indexOf('/dist/');
      if (at === -1) continue;
      const path = url.slice(at + 6);
      for (const [prefix, stage] of STAGES[thread]) if (path.startsWith(prefix)) return stage;
    }
    return thread === 'API thread' ? 'HTTP serving (Node, Hono)' : (STAGES[thread].at(-1)![1] ?? 'other');
  };
  const counts = new Map<string, number>();
  for (const id of inWindow) {
    if (!stageOfNode.has(id)) stageOfNode.set(id, classify(id));
    const stage = stageOfNode.get(id);
    if (stage) counts.set(stage, (counts.get(stage) ?? 0) + 1);
  }
  return { thread, counts };
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

/** The monotonic clock V8's profiles use, in µs. */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

interface RunResult {
  /** "thread|stage" -> µs per create. */
  stages: Map<string, number>;
  processUs: number | null;
}

async function oneRun(receiverOrigin: string, profiled: boolean): Promise<RunResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-cost-'));
  const profiles = KEEP && profiled ? KEEP : mkdtempSync(join(tmpdir(), 'csr-bench-cost-prof-'));
  csr(dataDir, 'workspaces', 'create', 'cost');
  if (WEBHOOK) csr(dataDir, 'webhooks', 'create', '--workspace', 'cost', '--name', 'cost', '--url', `${receiverOrigin}/cost`);
  const key = csr(dataDir, 'keys', 'create', '--workspace', 'cost', '--name', 'bench').key as string;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const profile = profiled ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-interval=${INTERVAL_US}`] : [];
  const child = spawn(process.execPath, [...profile, 'dist/src/main.js'], {
    cwd: root,
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
  await post(url, key, WARMUP);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const cpuBefore = treeCpuMs(child.pid!);
  const from = nowUs();
  await post(url, key, CREATES);
  // The followers (reactors, webhook deliveries) finish what the creates gave them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const to = nowUs();
  const cpuAfter = treeCpuMs(child.pid!);
  await stop(child);

  const stages = new Map<string, number>();
  for (const file of readdirSync(profiles).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(profiles, file), 'utf8')) as Profile;
    const { thread, counts } = stagesOf(file, profile, from, to);
    for (const [stage, samples] of counts) {
      const name = `${thread}|${stage}`;
      stages.set(name, (stages.get(name) ?? 0) + (samples * INTERVAL_US) / CREATES);
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
  if (!KEEP) rmSync(profiles, { recursive: true, force: true });
  return { stages, processUs: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / CREATES };
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
  try {
    for (let run = 0; run < RUNS; run++) {
      plain.push(await oneRun(receiver.origin, false));
      if (SPLIT) profiledRuns.push(await oneRun(receiver.origin, true));
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
  console.log(`\nCPU per create by stage: median of ${RUNS} runs of ${CREATES} creates after ${WARMUP}, ${CONNECTIONS} connections\n`);
  console.log('| thread | stage | share of profiled CPU | µs per create |\n|---|---|---|---|');
  for (const [thread, threadRows] of [...byThread].sort((a, b) => a[0].localeCompare(b[0]))) {
    for (const row of threadRows.sort((a, b) => b.share - a.share)) console.log(`| ${thread} | ${row.name.split('|')[1]} | ${(100 * row.share).toFixed(1)}% | ${us(row.share)} |`);
    const share = threadRows.reduce((sum, row) => sum + row.share, 0);
    console.log(`| ${thread} | **all** | **${(100 * share).toFixed(1)}%** | **${us(share)}** |`);
  }
  const whole = total === null ? 'n/a (not Linux)' : `${total.toFixed(0)} µs (runs: ${processes.map((value) => value.toFixed(0)).join(', ')})`;
  console.log(`| the process, every thread (/proc, unprofiled) | | | **${whole}** |\n`);
  return [{ scenario: 'create: CPU per create, every thread of the process (createCost.ts)', result: whole, target: '<= 250 µs' }];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await createCostBench()) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
}

import { jsFrameOf, type JsFrame, type Sample } from './perfSamples.js';

/**
 * The stages of a create (bench/createCost.ts): which thread a sample was taken on, and which
 * stage of that thread's work its stack is in, for samples of either source (V8's profiles or
 * perf's CPU samples).
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export type Thread = 'API thread' | 'commit thread' | 'projector thread' | 'dispatcher thread' | 'other threads';

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
    ['src/readstore/sqlite/checkpointWaiters', 'read-your-writes wait'],
    ['projections/readYourWrites', 'read-your-writes wait'],
    ['src/readstore/', 'validation + decide'],
    // The signals another thread's commit or checkpoint rings (read-your-writes waits, the switch of read connections).
    ['src/sqlite/fileSignal', 'wake-ups from other threads'],
    ['src/core/doorbells', 'wake-ups from other threads'],
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

/** A thread by what it ran: the main thread serves the API; a worker by the project's code it runs. */
export function threadOf(isMain: boolean, urls: Iterable<string>): Thread {
  if (isMain) return 'API thread';
  const seen = [...urls];
  const has = (part: string) => seen.some((url) => url.includes(`/dist/${part}`));
  if (has('src/webhooks/')) return 'dispatcher thread';
  if (has('projections/')) return 'projector thread';
  // Followers are told apart above; what else runs the log's code commits the API's appends.
  if (has('src/eventstore/')) return 'commit thread';
  return 'other threads';
}

/** A sample's stage by its stack (innermost frame first): a wrapper anywhere, else the deepest frame of the project's code. */
export function stageOf(thread: Thread, stack: readonly JsFrame[]): string {
  if (thread === 'API thread') for (const frame of stack) for (const [name, stage] of WRAPPERS) if (frame.functionName === name) return stage;
  for (const { url } of stack) {
    const at = url.indexOf('/dist/');
    if (at === -1) continue;
    const path = url.slice(at + 6);
    for (const [prefix, stage] of STAGES[thread]) if (path.startsWith(prefix)) return stage;
  }
  return thread === 'API thread' ? 'HTTP serving (Node, Hono)' : (STAGES[thread].at(-1)![1] ?? 'other');
}

/** Stage -> samples in the window [from, to] (µs, the profile's monotonic clock). */
export function stagesOfProfile(file: string, profile: Profile, from: number, to: number): { thread: Thread; counts: Map<string, number> } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const inWindow: number[] = [];
  let time = profile.startTime;
  profile.samples.forEach((id, i) => {
    time += profile.timeDeltas[i] ?? 0;
    if (time >= from && time <= to) inWindow.push(id);
  });
  // The main thread's profile is named with thread id 0 (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile).
  const thread = threadOf(file.split('.')[4] === '0', new Set(inWindow.map((id) => byId.get(id)!.callFrame.url)));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stageOfNode = new Map<number, string | null>();
  const classify = (id: number): string | null => {
    const leaf = byId.get(id)!.callFrame.functionName;
    if (leaf === '(idle)' || leaf === '(root)') return null;
    if (leaf === '(garbage collector)') return 'garbage collector';
    if (leaf === '(program)') return 'V8 and native, outside JavaScript';
    const stack: JsFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at)!.callFrame);
    return stageOf(thread, stack);
  };
  const counts = new Map<string, number>();
  for (const id of inWindow) {
    if (!stageOfNode.has(id)) stageOfNode.set(id, classify(id));
    const stage = stageOfNode.get(id);
    if (stage) counts.set(stage, (counts.get(stage) ?? 0) + 1);
  }
  return { thread, counts };
}

/** A perf thread's row: the thread it is, and whether it never ran JavaScript (a helper). */
export interface PerfThread {
  thread: Thread;
  native: boolean;
}

/**
 * perf's samples of every thread of the process `pid`, split: stage -> samples, and thread id ->
 * its row. Each thread is told apart by the project code its samples ran (the main thread is the
 * process's own id); a thread that never ran JavaScript is one of V8's or libuv's helpers (garbage
 * collection, compilation), in the row of other threads.
 */
export function splitPerf(pid: number, samples: readonly Sample[]): { stages: Map<string, number>; threads: Map<number, PerfThread> } {
  const urlsOf = new Map<number, Set<string>>();
  const stacks = samples.map((sample) => {
    const stack = sample.frames.map((frame) => jsFrameOf(frame.symbol)).filter((frame): frame is JsFrame => frame !== null);
    let urls = urlsOf.get(sample.tid);
    if (!urls) urlsOf.set(sample.tid, (urls = new Set()));
    for (const frame of stack) urls.add(frame.url);
    return { tid: sample.tid, stack };
  });
  const threads = new Map([...urlsOf].map(([tid, urls]): [number, PerfThread] => [tid, { thread: urls.size === 0 ? 'other threads' : threadOf(tid === pid, urls), native: urls.size === 0 }]));
  const stages = new Map<string, number>();
  for (const { tid, stack } of stacks) {
    const { thread, native } = threads.get(tid)!;
    const name = native ? `other threads|${HELPERS}` : `${thread}|${stageOf(thread, stack)}`;
    stages.set(name, (stages.get(name) ?? 0) + 1);
  }
  return { stages, threads };
}

/** The stage of threads that never run the project's JavaScript. */
export const HELPERS = 'V8 and libuv helper threads (garbage collection, compilation)';

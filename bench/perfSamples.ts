import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * CPU samples of a running process taken by Linux `perf` (Debian's linux-perf) on the kernel's
 * `cpu-clock` event: a thread is sampled only while it runs on a CPU. V8's own profiler samples a
 * thread at fixed wall-clock intervals whenever it is outside its event loop's wait, so a thread
 * that is preempted or blocked in a synchronous call (an fsync, a SQLite step on a two-core machine
 * shared with the load generator) is counted as if it were computing; perf counts what the CPU
 * did, in every thread of the process, kernel work on its behalf included. JavaScript frames are
 * named from V8's JIT dump (`perfTarget`).
 */

/** One frame of a sampled stack: its symbol, and the file it is in (a JIT frame's is a library `perf inject` made of it). */
export interface Frame {
  symbol: string;
  dso: string;
}

/** One sample: the thread that ran, when (µs of the monotonic clock, when perf wrote it), and its stack, innermost frame first. */
export interface Sample {
  tid: number;
  timeUs?: number;
  frames: Frame[];
}

/** A span of the monotonic clock, in µs (`process.hrtime`, the clock `recordPerf` has perf stamp samples with). */
export interface Window {
  fromUs: number;
  toUs: number;
}

/** A JavaScript frame of a perf stack: the function's name and its script's URL. */
export interface JsFrame {
  functionName: string;
  url: string;
}

/** Whether `perf record` can sample a process here (installed, and allowed by perf_event_paranoid). */
export function perfAvailable(): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'csr-bench-perf-probe-'));
  try {
    const probe = spawnSync('perf', ['record', '-e', 'cpu-clock', '-o', join(dir, 'probe.data'), '--', 'true'], { stdio: 'ignore' });
    return probe.status === 0;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * How a process is started for perf to name its JavaScript frames: V8's JIT dump (`--perf-prof`),
 * which `perf inject --jit` reads with each function's lifetime, written into `cwd` (V8 writes it
 * into the working directory), a folder of its own that `recordPerf` removes. The map that
 * `--perf-basic-prof` writes instead has no lifetimes: once V8 frees code and puts other code at
 * the same addresses, a sample there is named after whichever function the map lists first, and
 * over a run of minutes many of its entries overlap (docs/performance.md, session 37). Each
 * interpreted function gets a frame of its own too (`--interpreted-frames-native-stack`), rather
 * than all of them sharing the interpreter's.
 */
export interface PerfTarget {
  args: string[];
  cwd: string;
}

export function perfTarget(): PerfTarget {
  return { args: ['--perf-prof', '--interpreted-frames-native-stack'], cwd: mkdtempSync(join(tmpdir(), 'csr-bench-perf-jit-')) };
}

/**
 * Samples every thread of `pid` (call stacks, `hz` a second); `target` is what the process was
 * started with. Start it before the process compiles what is to be measured: perf names only code
 * that V8 compiled while it recorded. Call `stop` once the process has exited by itself or on a
 * signal it handles (the service's SIGTERM): V8 writes its JIT dump through a buffer that only the
 * process's exit flushes, and `stop` answers the samples of `window`. perf's files, its cache of
 * the binaries it saw and the target's folder are removed by `stop`.
 */
export async function recordPerf(pid: number, hz: number, target: PerfTarget): Promise<{ stop(window?: Window): Promise<Sample[]> }> {
  const dir = mkdtempSync(join(tmpdir(), 'csr-bench-perf-'));
  const data = join(dir, 'perf.data');
  const injected = join(dir, 'perf.jit.data');
  // perf's cache of the binaries it saw, by default in the home folder, where it kept a copy of
  // every library perf inject makes; this perf answers the PERF_BUILDID_DIR variable only in part.
  const cache = ['--buildid-dir', join(dir, 'buildids')];
  // -k 1: the monotonic clock, which V8 stamps its JIT dump's entries with.
  const perf: ChildProcess = spawn('perf', [...cache, 'record', '-k', '1', '-e', 'cpu-clock', '-F', String(hz), '-g', '-p', String(pid), '-o', data], { stdio: 'ignore' });
  // perf attaches to each thread before it samples; what it misses meanwhile is the window's edge.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return {
    async stop(window) {
      // perf ends with the process it records; one that could not attach has exited already (its
      // data file is missing and `perf inject` says so).
      if (perf.exitCode === null && perf.signalCode === null) {
        const exited = new Promise((resolve) => perf.once('exit', resolve));
        perf.kill('SIGINT');
        await exited;
      }
      const run = (args: string[]) => execFileSync('perf', [...cache, ...args], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
      try {
        // Writes a small library per compiled function into the target's folder, beside the dump.
        run(['inject', '--jit', '-i', data, '-o', injected]);
        // perf keeps only the window's samples: the warm-up before it is most of the recording.
        const span = window ? ['--time', `${(window.fromUs / 1e6).toFixed(6)},${(window.toUs / 1e6).toFixed(6)}`] : [];
        return parsePerfScript(run(['script', '-i', injected, '-F', 'tid,time,ip,sym,dso', ...span]));
      } finally {
        rmSync(dir, { recursive: true, force: true });
        rmSync(target.cwd, { recursive: true, force: true });
      }
    },
  };
}

const FRAME = /^\s*[0-9a-f]+\s+(.*)\s+\(([^()]*)\)\s*$/;

/**
 * `perf script -F tid[,time],ip,sym,dso` text as samples: a line with the thread id (and the time,
 * in seconds), then one line per frame (address, symbol, the file in parentheses), then a blank line.
 */
export function parsePerfScript(text: string): Sample[] {
  const samples: Sample[] = [];
  let current: Sample | null = null;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (current) samples.push(current);
      current = null;
    } else if (!line.startsWith('\t')) {
      if (current) samples.push(current);
      const [tid, time] = line.trim().split(/\s+/);
      current = { tid: Number(tid), frames: [] };
      if (time !== undefined && /^\d+\.\d+:$/.test(time)) current.timeUs = Math.round(Number(time.slice(0, -1)) * 1e6);
    } else if (current) {
      const frame = FRAME.exec(line);
      if (frame) current.frames.push({ symbol: frame[1]!.replace(/\+0x[0-9a-f]+$/, ''), dso: frame[2]! });
    }
  }
  if (current) samples.push(current);
  return samples;
}

/**
 * A perf JIT symbol as V8 writes it in its JIT dump: `JS:<tier><name> <url>:<line>:<column>` (`*`
 * optimized, `^` baseline, `~` interpreted), the name empty for an anonymous function. Null for a
 * native or kernel frame.
 */
export function jsFrameOf(symbol: string): JsFrame | null {
  if (!symbol.startsWith('JS:')) return null;
  const rest = /^[*^~+-]/.test(symbol.slice(3)) ? symbol.slice(4) : symbol.slice(3);
  const space = rest.indexOf(' ');
  const functionName = space === -1 ? rest : rest.slice(0, space);
  const location = space === -1 ? '' : rest.slice(space + 1);
  return { functionName, url: location.replace(/:\d+:\d+$/, '') };
}

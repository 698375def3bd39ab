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
 * named by the process's `--perf-basic-prof` map (`/tmp/perf-<pid>.map`, removed by `stop`).
 */

/** One frame of a sampled stack: its symbol, and the file it is in (a JIT frame's is the map). */
export interface Frame {
  symbol: string;
  dso: string;
}

/** One sample: the thread that ran, and its stack, innermost frame first. */
export interface Sample {
  tid: number;
  frames: Frame[];
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

/** The node arguments that let perf name JavaScript frames. */
export const PERF_NODE_ARGS = ['--perf-basic-prof'];

/** Samples every thread of `pid` (call stacks, `hz` a second) until `stop` answers them. */
export async function recordPerf(pid: number, hz = 1000): Promise<{ stop(): Promise<Sample[]> }> {
  const dir = mkdtempSync(join(tmpdir(), 'csr-bench-perf-'));
  const data = join(dir, 'perf.data');
  const perf: ChildProcess = spawn('perf', ['record', '-e', 'cpu-clock', '-F', String(hz), '-g', '-p', String(pid), '-o', data], { stdio: 'ignore' });
  // perf attaches to each thread before it samples; what it misses meanwhile is the window's edge.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return {
    async stop() {
      // A perf that could not attach has exited already: its data file is missing and `perf script` says so.
      if (perf.exitCode === null && perf.signalCode === null) {
        const exited = new Promise((resolve) => perf.once('exit', resolve));
        perf.kill('SIGINT');
        await exited;
      }
      try {
        const text = execFileSync('perf', ['script', '-i', data, '-F', 'tid,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
        return parsePerfScript(text);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        rmSync(`/tmp/perf-${pid}.map`, { force: true });
      }
    },
  };
}

const FRAME = /^\s*[0-9a-f]+\s+(.*)\s+\(([^()]*)\)\s*$/;

/**
 * `perf script -F tid,ip,sym,dso` text as samples: a line with the thread id, then one line per
 * frame (address, symbol, the file in parentheses), then a blank line.
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
      current = { tid: Number(line.trim().split(/\s+/)[0]), frames: [] };
    } else if (current) {
      const frame = FRAME.exec(line);
      if (frame) current.frames.push({ symbol: frame[1]!.replace(/\+0x[0-9a-f]+$/, ''), dso: frame[2]! });
    }
  }
  if (current) samples.push(current);
  return samples;
}

/**
 * A perf JIT symbol as V8 writes it in the map: `JS:<tier><name> <url>:<line>:<column>` (`*`
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

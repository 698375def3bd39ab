import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time used by a server: the process, its threads and every process it started (the forked
 * API processes of API_PROCESSES). A rate says how the server did with the CPU the host gave it;
 * CPU time per request says what a request cost, whatever else the host was doing, and time
 * stolen by other guests is not in it. It still drifts with the machine (bare GET took 56 to 100
 * µs per request within one run), so it too is best read beside the bare figure measured just
 * before. Linux only (it reads /proc); elsewhere every reading is null.
 */

const TICKS_PER_SECOND = clockTicks();

function clockTicks(): number | null {
  if (process.platform !== 'linux') return null;
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || null;
  } catch {
    return null;
  }
}

export interface ProcessStat {
  ppid: number;
  ticks: number;
}

/** A /proc/<pid>/stat line: the parent and the utime + stime (in clock ticks) of all its threads. */
export function parseStat(text: string): ProcessStat {
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
  return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
}

/** null once the process is gone (it may exit between listing /proc and reading it). */
function readStat(pid: number): ProcessStat | null {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** CPU milliseconds used so far by the process `pid` alone (a PostgreSQL backend); null off Linux or once it is gone. */
export function processCpuMs(pid: number): number | null {
  const stat = TICKS_PER_SECOND === null ? null : readStat(pid);
  return stat && (stat.ticks * 1000) / TICKS_PER_SECOND!;
}

/** CPU milliseconds used so far by `pid` and all its descendants; null off Linux. */
export function treeCpuMs(pid: number): number | null {
  if (TICKS_PER_SECOND === null) return null;
  const ticksOf = new Map<number, number>();
  const childrenOf = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const id = Number(entry);
    const stat = readStat(id);
    if (!stat) continue;
    ticksOf.set(id, stat.ticks);
    const siblings = childrenOf.get(stat.ppid);
    if (siblings) siblings.push(id);
    else childrenOf.set(stat.ppid, [id]);
  }
  let ticks = 0;
  const pending = [pid];
  while (pending.length > 0) {
    const current = pending.pop()!;
    ticks += ticksOf.get(current) ?? 0;
    pending.push(...(childrenOf.get(current) ?? []));
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** Runs `work` and returns its result with the CPU µs that `pid`'s tree spent per request meanwhile. */
export async function cpuPerRequest<T extends { requests: number }>(pid: number, work: () => Promise<T>): Promise<T & { cpuUs: number | null }> {
  const before = treeCpuMs(pid);
  const result = await work();
  const after = treeCpuMs(pid);
  const cpuUs = before === null || after === null || result.requests === 0 ? null : ((after - before) * 1000) / result.requests;
  return { ...result, cpuUs };
}

/** The bytes a thread has passed to write system calls (files and sockets): `wchar` of a /proc/<pid>/task/<tid>/io text. */
export function parseWrittenBytes(text: string): number | null {
  const match = /^wchar:\s*(\d+)$/m.exec(text);
  return match ? Number(match[1]) : null;
}

/**
 * Thread id -> bytes written so far, for every thread of `pid` (Linux; null elsewhere). Per thread,
 * because each thread of a server writes one file's log: the commit thread the event log's, the
 * projector the read model's, the checkpointer copies both back.
 */
export function threadWrites(pid: number): Map<number, number> | null {
  if (process.platform !== 'linux') return null;
  const written = new Map<number, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  for (const tid of tids) {
    try {
      const bytes = parseWrittenBytes(readFileSync(`/proc/${pid}/task/${tid}/io`, 'utf8'));
      if (bytes !== null) written.set(Number(tid), bytes);
    } catch {
      // A thread that ended between the listing and the read wrote nothing more that counts.
    }
  }
  return written;
}

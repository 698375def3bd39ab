import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sqlite } from '../src/sqlite/driver.js';
import { cpuPerRequest } from './cpu.js';
import type { Measured } from './table.js';
import { wrk, type LoadOptions } from './wrk.js';

export const CONNECTIONS = 32;

/** A row of the bench's second table (loading, projection lag, webhooks): free text. */
export interface TextRow {
  scenario: string;
  result: string;
  target: string;
}

/** wrk against `server`, with the CPU time the server's processes spent per request meanwhile. */
export async function load(title: string, server: ChildProcess, options: Omit<LoadOptions, 'connections'>): Promise<Measured> {
  const result = await cpuPerRequest(server.pid!, () => wrk({ connections: CONNECTIONS, ...options }));
  if (result.failures > 0) console.error(`  ! ${title}: ${result.failures} failed requests`);
  return result;
}

const rate = (requestsPerSecond: number) => `${Math.round(requestsPerSecond).toLocaleString('en')} req/s`;
const cpu = (result: Measured) => (result.cpuUs === null ? '' : `, ${Math.round(result.cpuUs)} µs CPU/req`);
export const perSecond = (result: Measured) => `${rate(result.requestsPerSecond)}, p99 ${result.p99Ms.toFixed(1)} ms${cpu(result)}`;

/**
 * The mean time of one fsync'd SQLite commit (WAL, synchronous=FULL) in the bench's temp folder.
 * Every acknowledged write waits for one; the disk's latency drifts as the CPU's speed does (0.26
 * to 1.5 ms on the same VM within an hour), and the bare endpoint does not show it.
 */
export function commitMs(): number {
  const dir = mkdtempSync(join(tmpdir(), 'csr-bench-fsync-'));
  const db = new Sqlite(join(dir, 'probe.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE probe (n INTEGER)');
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  const commits = 100;
  const started = performance.now();
  for (let n = 0; n < commits; n++) insert.run(n);
  const ms = (performance.now() - started) / commits;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { processCpuMs } from './cpu.js';

/**
 * The bench's PostgreSQL: BENCH_DATABASE_URL, else DATABASE_URL, else the local server these
 * machines run. Every server under test gets a fresh database on it, dropped afterwards.
 */

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

export function benchAdminUrl(): string {
  return process.env['BENCH_DATABASE_URL'] || process.env['DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: benchAdminUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function benchDatabase(label: string): Promise<BenchDatabase> {
  const name = `csr_bench_${label}_${randomBytes(4).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(benchAdminUrl());
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined) };
}

/** true, or why the PostgreSQL rows cannot run. */
export async function postgresReachable(): Promise<true | string> {
  try {
    await admin((client) => client.query('SELECT 1'));
    return true;
  } catch (error) {
    return `no PostgreSQL server at ${new URL(benchAdminUrl()).host} (${(error as Error).message}); set BENCH_DATABASE_URL`;
  }
}

export async function postgresVersion(): Promise<string> {
  const version = await admin((client) => client.query<{ server_version: string }>('SHOW server_version'));
  return `PostgreSQL ${version.rows[0]!.server_version.split(' ')[0]}`;
}

/**
 * Starts counting the CPU time of the server's backends of the database at `url`: every
 * connection and autovacuum worker of that database (pg_stat_activity), read from /proc. The
 * function it answers tells the milliseconds they used since, or null when the server is not on
 * this machine (no backend's figure could be read). A backend that exits before the second reading
 * (a query's parallel workers included) is not counted: the servers under test keep their pools open.
 */
export async function databaseCpu(url: string): Promise<() => Promise<number | null>> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const backends = async () => {
    const { rows } = await admin((client) => client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]));
    return new Map(rows.map(({ pid }) => [pid, processCpuMs(pid)]));
  };
  const before = await backends();
  return async () => {
    const after = await backends();
    const read = [...after.values()].filter((ms): ms is number => ms !== null);
    if (read.length === 0) return null;
    let used = 0;
    for (const [pid, ms] of after) if (ms !== null) used += ms - (before.get(pid) ?? 0)!;
    return used;
  };
}

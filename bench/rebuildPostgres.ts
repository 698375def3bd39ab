import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { eventsUpTo } from '../projections/logRange.js';
import { rebuildReadModel } from '../projections/rebuild.js';
import { recordProjection as recordProjectionOf } from '../projections/recordProjection.js';
import { openPostgresEventStore } from '../src/eventstore/postgres/index.js';
import { openPool } from '../src/postgres/pool.js';
import { openPostgresReadStore } from '../src/readstore/postgres/index.js';
import { Catalogues } from '../src/setup/catalogues.js';
import type { TextRow } from './measure.js';
import { benchDatabase, databaseCpu, postgresReachable } from './postgres.js';
import { projectToHead, rate, writeLog } from './rebuildLog.js';

/**
 * Rebuild speed on PostgreSQL (issue 41: a rebuild reads the log at >= 30% of a raw SELECT of it):
 * the log of bench/rebuild.ts (BENCH_PG_REBUILD_EVENTS record events) written to a fresh database,
 * read raw by a plain client (keyset pages of the events table, every column, the driver parsing
 * the JSON as any client's would), read again through the store's own catch-up subscription,
 * projected by the live runner from empty (a rebuild never passes the live checkpoint), then
 * rebuilt blue/green by `rebuildReadModel`, and the floor (the rebuilt rows copied by the server
 * alone), all in one run. `BENCH_ONLY=postgres` runs it after
 * the HTTP scenarios; `BENCH_ONLY=pgrebuild` runs it alone.
 */

const EVENTS = Number(process.env['BENCH_PG_REBUILD_EVENTS'] ?? 100_000);
const RAW_PAGE = 10_000;

/** The log as a client would read it: every column of every event, in pages by position. */
async function rawRead(client: pg.Client): Promise<number> {
  let count = 0;
  for (let after = '0'; ; ) {
    const page = await client.query<{ seq: string }>(
      'SELECT seq, id, stream, revision, type, created_ms, data, metadata FROM csr_events WHERE seq > $1 ORDER BY seq LIMIT $2',
      [after, RAW_PAGE],
    );
    count += page.rows.length;
    if (page.rows.length < RAW_PAGE) return count;
    after = page.rows.at(-1)!.seq;
  }
}

/**
 * The floor under any rebuild into this layout: the live generation's rows copied by the server
 * alone (no event read, no projection, no JavaScript per row) into fresh partitions with every
 * index (their counts kept by the store's triggers), in key order, then vacuumed and analyzed as a
 * promotion does; dropped afterwards.
 */
async function copyFloorMs(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ live: number; spare: number }>(
    "SELECT live, (SELECT max(generation) FROM csr_records) + 100 AS spare FROM csr_read_model WHERE id = 'records'",
  );
  const { live, spare } = rows[0]!;
  const started = performance.now();
  await pool.query(`CREATE TABLE csr_records_g${spare} PARTITION OF csr_records FOR VALUES IN (${spare})`);
  await pool.query(`CREATE TABLE csr_record_keys_g${spare} PARTITION OF csr_record_keys FOR VALUES IN (${spare})`);
  await pool.query(`CREATE TABLE csr_record_counts_g${spare} PARTITION OF csr_record_counts FOR VALUES IN (${spare})`);
  try {
    await pool.query(
      `INSERT INTO csr_records SELECT ${spare}, workspace_id, object, id, name, name_key, fields, calculated, created_at, updated_at, updated_ms,
         created_position, revision, rendered, escaped FROM csr_records WHERE generation = ${live} ORDER BY workspace_id, object, id`,
    );
    await pool.query(
      `INSERT INTO csr_record_keys SELECT ${spare}, workspace_id, object, key, created_position, id FROM csr_record_keys
         WHERE generation = ${live} ORDER BY workspace_id, object, key, created_position, id`,
    );
    await pool.query(`VACUUM (ANALYZE) csr_records_g${spare}, csr_record_keys_g${spare}`);
    return performance.now() - started;
  } finally {
    await pool.query(`DROP TABLE csr_records_g${spare}, csr_record_keys_g${spare}, csr_record_counts_g${spare}`);
  }
}

/**
 * CPU milliseconds of this process and of the database's server backends (when the server runs on
 * this machine: /proc) spent by `work`: a rate moves with what else the machine runs, the CPU per
 * event much less, so a change is judged by it.
 */
async function cpuOf<T>(url: string, work: () => Promise<T>): Promise<{ result: T; nodeMs: number; serverMs: number | null }> {
  const server = await databaseCpu(url);
  const node = process.cpuUsage();
  const result = await work();
  const { user, system } = process.cpuUsage(node);
  return { result, nodeMs: (user + system) / 1000, serverMs: await server() };
}

const perEvent = (events: number, { nodeMs, serverMs }: { nodeMs: number; serverMs: number | null }) =>
  `CPU per event: ${Math.round((1000 * nodeMs) / events)} µs here${serverMs === null ? '' : ` + ${Math.round((1000 * serverMs) / events)} µs in the server`}`;

export async function postgresRebuildBench(): Promise<TextRow[]> {
  const reachable = await postgresReachable();
  if (reachable !== true) return [{ scenario: 'PostgreSQL rebuild', result: `skipped: ${reachable}`, target: '' }];
  const database = await benchDatabase('rebuild');
  const pool = openPool({ url: database.url, applicationName: 'csr-bench-rebuild' });
  const rows: TextRow[] = [];
  try {
    const events = await openPostgresEventStore({ pool });
    const readStore = await openPostgresReadStore({ pool });
    await writeLog(events, randomUUID(), EVENTS);
    const catalogues = new Catalogues(events);
    await catalogues.watch();
    const recordProjection = recordProjectionOf(catalogues);
    const head = (await events.headPosition())!;
    // Statistics as a running server's would be: this server may run without autovacuum.
    await pool.query('VACUUM ANALYZE csr_events');

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    // Once unmeasured: the log was just written, and every later read finds it in the server's cache.
    await rawRead(client);
    let started = performance.now();
    const raw = await cpuOf(database.url, () => rawRead(client));
    await client.end();
    const count = raw.result;
    const rawRate = rate(count, performance.now() - started);
    rows.push({ scenario: `PostgreSQL: raw SELECT of the log, ${count} events`, result: `${rawRate} events/s; ${perEvent(count, raw)}`, target: '-' });

    started = performance.now();
    let followed = 0;
    for await (const _ of eventsUpTo(events, null, recordProjection.filter, head)) followed++;
    const followRate = rate(followed, performance.now() - started);
    rows.push({ scenario: `PostgreSQL: the log through the store's catch-up subscription`, result: `${followRate} events/s (${Math.round((100 * followRate) / rawRate)}% of raw)`, target: '-' });

    const liveMs = await projectToHead(events, readStore, recordProjection);
    rows.push({ scenario: `PostgreSQL: live projector from empty, ${count} events`, result: `${rate(count, liveMs)} events/s (${Math.round((100 * rate(count, liveMs)) / rawRate)}% of raw)`, target: '-' });

    started = performance.now();
    const rebuilt = await cpuOf(database.url, () => rebuildReadModel({ events, readStore }, recordProjection));
    const result = rebuilt.result;
    const rebuildRate = rate(result.events, performance.now() - started);
    rows.push({
      scenario: `PostgreSQL: blue/green rebuild, ${result.events} events`,
      result: `${rebuildRate} events/s (${Math.round((100 * rebuildRate) / rawRate)}% of raw SELECT); ${perEvent(result.events, rebuilt)}`,
      target: '>= 30% of raw SELECT',
    });
    const floorMs = await copyFloorMs(pool);
    rows.push({
      scenario: 'PostgreSQL floor: the rebuilt rows and indexes copied by the server alone',
      result: `${(floorMs / 1000).toFixed(2)} s, ${rate(result.events, floorMs)} events/s (${Math.round((100 * rate(result.events, floorMs)) / rawRate)}% of raw SELECT)`,
      target: '-',
    });
    await catalogues.close();
    await readStore.close();
    await events.close();
  } finally {
    await pool.end();
    await database.drop();
  }
  return rows;
}

if (process.argv[1] && import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await postgresRebuildBench()) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
  process.exit(0);
}

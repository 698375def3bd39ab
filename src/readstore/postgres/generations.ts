import { inTransaction, type Pool, type PoolClient } from '../../postgres/pool.js';
import type { BuildingGeneration, Generations } from '../port.js';
import { generationOfPartition, partitionsOf, POINTER_ID } from './schema.js';
import { createStagedKeys } from './stagedKeys.js';

/** The pointer row of csr_read_model and the partitions of each generation (see ./schema.ts). */

export interface PointerRow {
  live: number;
  live_version: string | null;
  building: number | null;
  building_version: string | null;
  building_position: string | null;
  building_owner: string | null;
  building_started_at: string | null;
}

export function fromPointer(row: PointerRow): Generations {
  const building: BuildingGeneration | null =
    row.building === null
      ? null
      : {
          generation: row.building,
          version: row.building_version ?? '',
          position: row.building_position,
          owner: row.building_owner ?? '',
          startedAt: row.building_started_at ?? '',
        };
  return { live: row.live, liveVersion: row.live_version, building };
}

/**
 * The pointer, locked for the rest of the transaction: FOR SHARE by a projection's transaction (so
 * that a promotion waits for it, and it for a promotion, whose new live generation it then reads),
 * FOR UPDATE by whatever changes the pointer.
 */
export async function lockPointer(client: PoolClient, mode: 'SHARE' | 'UPDATE'): Promise<PointerRow> {
  const found = await client.query<PointerRow>(`SELECT * FROM csr_read_model WHERE id = $1 FOR ${mode}`, [POINTER_ID]);
  return found.rows[0]!;
}

/** The generations that have partitions. */
export async function partitionedGenerations(client: PoolClient): Promise<number[]> {
  const found = await client.query<{ name: string }>(
    "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'csr_records'::regclass",
  );
  return found.rows.map((row) => generationOfPartition(row.name)).filter((generation): generation is number => generation !== null);
}

/** The partitions of a generation to be built: its keys staged (./stagedKeys.ts), their partition made when they are merged. */
export async function createPartitions(client: PoolClient, generation: number): Promise<void> {
  const { records, counts } = partitionsOf(generation);
  await client.query(`CREATE TABLE ${records} PARTITION OF csr_records FOR VALUES IN (${generation})`);
  await client.query(`CREATE TABLE ${counts} PARTITION OF csr_record_counts FOR VALUES IN (${generation})`);
  await createStagedKeys(client, generation);
}

/** A generation's partitions, and its staged keys if it has any. */
export async function dropPartitions(client: PoolClient, generation: number): Promise<void> {
  const { records, keys, counts, staged } = partitionsOf(generation);
  for (const table of [records, keys, counts, staged]) await client.query(`DROP TABLE IF EXISTS ${table}`);
}

/** How long a change of the generations' tables waits for each of their locks before it gives way (see `generationsChange`). */
const LOCK_WAIT_MS = 100;
/** Attempts of such a change before its failure is the caller's; the pause between two grows to PAUSE_MAX_MS. */
const ATTEMPTS = 50;
const PAUSE_MAX_MS = 200;

/**
 * A transaction that makes or drops partitions of the generations' tables: the pointer locked
 * FOR UPDATE, then the three partitioned tables ACCESS EXCLUSIVE, before `work`.
 *
 * Making or dropping a partition locks its parent table too, one table after the other. A list
 * reads the records, their keys and the counts, and locks them in the order of its own plan: a
 * list that held one table while this transaction held another waited for it, and the server's
 * deadlock detector ended the list (an error answered to its client). So every lock this needs
 * is taken first, each waited for at most LOCK_WAIT_MS (the reads under way finish; the next
 * ones queue behind it), far below the server's deadlock_timeout (1 s by default): where a read
 * would close a circle, this transaction gives way, rolls back and tries again after a pause,
 * and never the read. Projection transactions take the pointer first, as this one does.
 */
export async function generationsChange<T>(pool: Pool, work: (client: PoolClient, pointer: PointerRow) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inTransaction(pool, async (client) => {
        const pointer = await lockPointer(client, 'UPDATE');
        await client.query(`SET LOCAL lock_timeout = '${LOCK_WAIT_MS}ms'`);
        await client.query('LOCK TABLE csr_records, csr_record_keys, csr_record_counts IN ACCESS EXCLUSIVE MODE');
        await client.query('SET LOCAL lock_timeout = 0');
        return work(client, pointer);
      });
    } catch (error) {
      if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE || attempt === ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(PAUSE_MAX_MS, 10 * attempt) * (0.5 + Math.random())));
    }
  }
}

/** SQLSTATE of a lock not granted within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

import type { PoolClient } from '../../postgres/pool.js';
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

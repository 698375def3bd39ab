import type { PoolClient } from '../../postgres/pool.js';
import type { FieldFilter } from '../port.js';
import { DOCUMENT_COLUMNS, queryKeys } from './rows.js';
import { partitionsOf } from './schema.js';

/**
 * The filter keys of a generation being built, kept apart until it has caught up (./schema.ts).
 *
 * Written as rows of `csr_record_keys` while the rebuild fills the generation, each record's keys
 * cost an insert into two indexes, the deletion of the keys it no longer has (found by a third), and
 * the counts' trigger: most of the server's time of a rebuild (docs/performance.md). Staged, a
 * record's keys are one row of a plain table, replaced when the record is written again. Once the
 * rebuild has caught up, `mergeStagedKeys` writes them all into a plain table in one statement,
 * counts them, and attaches that table as the generation's partition of `csr_record_keys`: the
 * attach builds its indexes by sorting, where inserting row by row walked them at every key.
 *
 * A generation has no partition of `csr_record_keys` while its keys are staged, so a writer that
 * does not know this layout (an older version resuming the rebuild) fails at its first key instead
 * of leaving the keys before it out.
 */

/** Creates the table a generation's keys are staged in (one row per record). */
export async function createStagedKeys(client: PoolClient, generation: number): Promise<void> {
  await client.query(`CREATE TABLE ${partitionsOf(generation).staged} (
    workspace_id     text COLLATE "C" NOT NULL,
    object           text COLLATE "C" NOT NULL,
    id               text COLLATE "C" NOT NULL,
    created_position text COLLATE "C" NOT NULL,
    keys             text[] NOT NULL,
    PRIMARY KEY (workspace_id, object, id)
  )`);
}

/** Whether `generation`'s keys are staged (its staged table exists). */
export async function keysStaged(client: PoolClient, generation: number): Promise<boolean> {
  const found = await client.query<{ staged: boolean }>('SELECT to_regclass($1) IS NOT NULL AS staged', [partitionsOf(generation).staged]);
  return found.rows[0]!.staged;
}

/**
 * The last part of a documents' write (documentWrites.ts) where the keys are staged: the record's
 * row of keys, replaced (`d`: the documents written, with their keys).
 */
export function stageKeys(generation: number): string {
  return `INSERT INTO ${partitionsOf(generation).staged} (workspace_id, object, id, created_position, keys)
  SELECT workspace_id, object, id, created_position, keys FROM d
  ON CONFLICT (workspace_id, object, id) DO UPDATE SET created_position = EXCLUDED.created_position, keys = EXCLUDED.keys`;
}

/** Deletes a record of a generation whose keys are staged ($1 workspace, $2 object, $3 id, $4 generation). */
export function deleteStaged(generation: number): string {
  return `WITH gone AS (DELETE FROM ${partitionsOf(generation).staged} WHERE workspace_id = $1 AND object = $2 AND id = $3)
    DELETE FROM csr_records WHERE generation = $4 AND workspace_id = $1 AND object = $2 AND id = $3`;
}

/** Every record of the object matching all `filters`, in creation order, while the keys are staged. */
export function findAllStaged(generation: number, workspaceId: string, object: string, filters: FieldFilter[]): { text: string; values: unknown[] } {
  const keys = queryKeys(filters);
  return {
    text: `SELECT ${DOCUMENT_COLUMNS} FROM csr_records r JOIN ${partitionsOf(generation).staged} s
             ON s.workspace_id = r.workspace_id AND s.object = r.object AND s.id = r.id
           WHERE r.generation = $1 AND r.workspace_id = $2 AND r.object = $3 AND s.keys @> $4::text[]
           ORDER BY r.created_position, r.id`,
    values: [generation, workspaceId, object, keys],
  };
}

/**
 * The staged keys become the generation's partition of `csr_record_keys`, with their counts, and
 * the staged table goes; in the caller's transaction, which holds the generation's writer lock.
 */
export async function mergeStagedKeys(client: PoolClient, generation: number): Promise<void> {
  const { keys, staged } = partitionsOf(generation);
  await client.query(`CREATE TABLE ${keys} (
    generation       integer NOT NULL CHECK (generation = ${generation}),
    workspace_id     text COLLATE "C" NOT NULL,
    object           text COLLATE "C" NOT NULL,
    key              text COLLATE "C" NOT NULL,
    created_position text COLLATE "C" NOT NULL,
    id               text COLLATE "C" NOT NULL
  )`);
  await client.query(
    `INSERT INTO ${keys} (generation, workspace_id, object, key, created_position, id)
     SELECT ${generation}, workspace_id, object, unnest(keys), created_position, id FROM ${staged}`,
  );
  // What the counts' trigger would have kept, had the keys been inserted through csr_record_keys.
  await client.query(
    `INSERT INTO csr_record_counts AS c (generation, workspace_id, object, key, n)
     SELECT generation, workspace_id, object, key, count(*) FROM ${keys} GROUP BY 1, 2, 3, 4
     ON CONFLICT (workspace_id, object, key, generation) DO UPDATE SET n = c.n + EXCLUDED.n`,
  );
  // The CHECK constraint spares the attach a scan of the rows; it builds the partition's indexes.
  await client.query(`ALTER TABLE csr_record_keys ATTACH PARTITION ${keys} FOR VALUES IN (${generation})`);
  await client.query(`DROP TABLE ${staged}`);
}

import type { RecordDocument } from '../port.js';
import { toWrittenRow } from './rows.js';
import { stageKeys } from './stagedKeys.js';

/** Documents of one write statement at most (a rebuild's batch is split so the JSON stays small). */
const WRITE_CHUNK = 500;

/**
 * Replaces documents of one generation (param $1; JSON array of WrittenRow in $2): the record rows
 * are upserted, keys no longer in the document are deleted and new ones inserted (in a generation
 * whose keys are staged, each record's row of keys is replaced instead: ./stagedKeys.ts). The keys
 * deleted and inserted never overlap, so the statement's parts cannot collide on the keys' primary key.
 *
 * `LIMIT $3` (the array's length) is for the planner: it takes any recordset for 100 rows, and
 * for 100 records it found hashing every key row of the generation cheaper than probing the
 * by-record index 100 times, so a projector's batch of a few records read all the store's keys.
 */
const DOCUMENTS = `
  WITH d AS (
    SELECT * FROM jsonb_to_recordset($2::jsonb) AS d (
      workspace_id text COLLATE "C", object text COLLATE "C", id text COLLATE "C", name text, name_key text COLLATE "C",
      fields jsonb, calculated jsonb, created_at text, updated_at text, updated_ms bigint, created_position text COLLATE "C",
      revision integer, rendered text, escaped boolean, keys text[])
    LIMIT $3
  ), written AS (
    INSERT INTO csr_records (generation, workspace_id, object, id, name, name_key, fields, calculated, created_at, updated_at, updated_ms, created_position, revision, rendered, escaped)
    SELECT $1, workspace_id, object, id, name, name_key, fields, calculated, created_at, updated_at, updated_ms, created_position, revision, rendered, escaped FROM d
    ON CONFLICT (workspace_id, object, id, generation) DO UPDATE SET
      name = EXCLUDED.name, name_key = EXCLUDED.name_key, fields = EXCLUDED.fields, calculated = EXCLUDED.calculated,
      created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, updated_ms = EXCLUDED.updated_ms,
      created_position = EXCLUDED.created_position, revision = EXCLUDED.revision, rendered = EXCLUDED.rendered, escaped = EXCLUDED.escaped
  )`;

const WRITE_DOCUMENTS = `${DOCUMENTS}, k AS (
    SELECT d.workspace_id, d.object, d.id, d.created_position, key FROM d, unnest(d.keys) AS key
  ), gone AS (
    DELETE FROM csr_record_keys o USING d
    WHERE o.generation = $1 AND o.workspace_id = d.workspace_id AND o.object = d.object AND o.id = d.id
      AND NOT (o.key = ANY (d.keys) AND o.created_position = d.created_position)
  )
  INSERT INTO csr_record_keys (generation, workspace_id, object, key, created_position, id)
  SELECT $1, workspace_id, object, key, created_position, id FROM k
  ON CONFLICT DO NOTHING`;

/** The statements that write `documents` into `generation` (`staged`: its keys are staged), and how many records they write. */
export function documentWrites(
  generation: number,
  documents: readonly RecordDocument[],
  staged = false,
): { records: number; statements: { text: string; values: unknown[] }[] } {
  const text = staged ? `${DOCUMENTS}\n  ${stageKeys(generation)}` : WRITE_DOCUMENTS;
  // Several writes of one record in a batch: the last one counts (one statement cannot upsert a row twice).
  const last = new Map<string, RecordDocument>();
  for (const document of documents) last.set(JSON.stringify([document.workspaceId, document.object, document.id]), document);
  const rows = [...last.values()].map(toWrittenRow);
  const statements: { text: string; values: unknown[] }[] = [];
  for (let at = 0; at < rows.length; at += WRITE_CHUNK) {
    const chunk = rows.slice(at, at + WRITE_CHUNK);
    statements.push({ text, values: [generation, JSON.stringify(chunk), chunk.length] });
  }
  return { records: rows.length, statements };
}

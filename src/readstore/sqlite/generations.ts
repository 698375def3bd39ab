import type Database from 'better-sqlite3';
import type { BuildingGeneration, Generations } from '../port.js';
import { generationSchema, tablesOf, type StatementCache, type Tables } from './connection.js';

/**
 * The `read_model` row of the embedded read store: which generation is live and which one a
 * rebuild is filling. Reads look it up in the same snapshot as the documents they read, so a
 * promotion is seen by every reader (in any process) at one commit.
 */

interface Row {
  live: number;
  live_version: string | null;
  building: number | null;
  building_version: string | null;
  building_position: string | null;
  building_owner: string | null;
  building_started_at: string | null;
}

const ROW_SQL = 'SELECT live, live_version, building, building_version, building_position, building_owner, building_started_at FROM read_model WHERE id = 1';
const LIVE_SQL = 'SELECT live FROM read_model WHERE id = 1';

export function ensureReadModelRow(write: Database.Database): void {
  write.prepare('INSERT INTO read_model (id, live) VALUES (1, 1) ON CONFLICT DO NOTHING').run();
  write.exec(generationSchema(tablesOf(liveOn(write))));
}

export function liveOn(db: Database.Database | StatementCache): number {
  const statement = 'prepare' in db ? db.prepare(LIVE_SQL) : db.get(LIVE_SQL);
  const row = statement.get() as { live: number } | undefined;
  return row?.live ?? 1;
}

export function generationsOn(cache: StatementCache): Generations {
  const row = cache.get(ROW_SQL).get() as Row | undefined;
  if (!row) return { live: 1, liveVersion: null, building: null };
  return { live: row.live, liveVersion: row.live_version, building: buildingOf(row) };
}

function buildingOf(row: Row): BuildingGeneration | null {
  if (row.building === null) return null;
  return {
    generation: row.building,
    version: row.building_version ?? '',
    position: row.building_position,
    owner: row.building_owner ?? '',
    startedAt: row.building_started_at ?? '',
  };
}

/** Every generation that has tables in the file. */
export function generationsWithTables(write: Database.Database): number[] {
  const names = write.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND (name = 'documents' OR name GLOB 'documents_g[0-9]*')").all() as {
    name: string;
  }[];
  return names.map(({ name }) => (name === 'documents' ? 1 : Number(name.slice('documents_g'.length))));
}

/** A generation's tables in the order they are dropped (`documents` last: it is how a generation with tables is found). */
export function tablesToDrop(t: Tables): string[] {
  return [t.filters, t.filterCounts, t.collections, t.documents];
}

export function dropTables(write: Database.Database, t: Tables): void {
  write.exec(tablesToDrop(t).map((table) => `DROP TABLE IF EXISTS ${table};`).join(' '));
}

/** A statement failed because the tables it names were dropped (a promoted generation's old ones). */
export function isDroppedTable(error: unknown): boolean {
  return error instanceof Error && /no such table/.test(error.message);
}

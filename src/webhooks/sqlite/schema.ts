import type Database from 'better-sqlite3';
import { changeSchema } from '../../sqlite/file.js';

/** The tables of `webhooks.db`, and the migrations of files made by earlier releases. */

export function applyWebhookSchema(db: Database.Database): void {
  changeSchema(db, () => {
    migrateDeliveries(db);
    addListenerColumn(db);
    addLastAttemptColumns(db);
    db.exec(SCHEMA);
  });
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhooks (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  objects TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  disabled_reason TEXT,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  last_success_at TEXT,
  listener INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS webhooks_by_workspace ON webhooks (workspace_id, created_at);

CREATE TABLE IF NOT EXISTS payloads (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  event TEXT NOT NULL,
  object TEXT,
  source TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  data TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event TEXT NOT NULL,
  status TEXT NOT NULL,
  response_code INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  created_at TEXT NOT NULL,
  last_attempt_at TEXT,
  next_attempt_at TEXT,
  claimed_until TEXT,
  cause TEXT,
  original_id INTEGER,
  last_sent_at TEXT,
  last_signature TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS deliveries_fan_out_unique ON deliveries (webhook_id, event_id) WHERE cause IS NULL;
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (webhook_id, next_attempt_at) WHERE status IN ('waiting', 'retrying');
CREATE INDEX IF NOT EXISTS deliveries_by_webhook ON deliveries (webhook_id, id);
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE INDEX IF NOT EXISTS deliveries_by_event ON deliveries (event_id);

CREATE TABLE IF NOT EXISTS bulk_members (
  event_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  action_id TEXT NOT NULL,
  object TEXT NOT NULL,
  kind TEXT NOT NULL,
  record_id TEXT NOT NULL,
  source TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  position TEXT NOT NULL,
  action_count INTEGER NOT NULL,
  bulk_id TEXT
);
CREATE INDEX IF NOT EXISTS bulk_members_pending ON bulk_members (action_id, object, kind, position) WHERE bulk_id IS NULL;
CREATE INDEX IF NOT EXISTS bulk_members_by_action ON bulk_members (action_id, object);
`;

/**
 * Stores made before resends had deliveries unique per (webhook, event) for every row; SQLite
 * cannot drop a table constraint, so such a table is copied once into the current shape (ids and
 * the id sequence kept, so X-SVC-Delivery values are never reused).
 */
function migrateDeliveries(db: Database.Database): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('deliveries')").all() as { name: string }[];
  if (columns.length === 0 || columns.some((column) => column.name === 'cause')) return;
  // Inside the store's schema transaction (changeSchema): all of it or none.
  db.exec('ALTER TABLE deliveries RENAME TO deliveries_before_causes');
  db.exec(SCHEMA);
  db.exec(
    `INSERT INTO deliveries (id, webhook_id, event_id, event, status, response_code, attempts, error, created_at, last_attempt_at, next_attempt_at, claimed_until)
     SELECT id, webhook_id, event_id, event, status, response_code, attempts, error, created_at, last_attempt_at, next_attempt_at, claimed_until FROM deliveries_before_causes`,
  );
  const old = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'deliveries_before_causes'").get() as { seq: number } | undefined;
  if (old) db.prepare("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'deliveries'").run(old.seq);
  db.exec('DROP TABLE deliveries_before_causes');
}

/** A `webhooks.db` made before listen sessions gets their column (0: an ordinary webhook). */
function addListenerColumn(db: Database.Database): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('webhooks')").all() as { name: string }[];
  if (columns.length === 0 || columns.some((column) => column.name === 'listener')) return;
  db.exec('ALTER TABLE webhooks ADD COLUMN listener INTEGER NOT NULL DEFAULT 0');
}

/** A `webhooks.db` made before the Setup page showed the last attempt's headers gets their columns. */
function addLastAttemptColumns(db: Database.Database): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('deliveries')").all() as { name: string }[];
  if (columns.length === 0 || columns.some((column) => column.name === 'last_signature')) return;
  db.exec('ALTER TABLE deliveries ADD COLUMN last_sent_at TEXT');
  db.exec('ALTER TABLE deliveries ADD COLUMN last_signature TEXT');
}

import type Database from 'better-sqlite3';
import { applySchema, openSqliteFile } from '../../sqlite/file.js';
import type { Claim, ClaimOptions, IdempotencyStore, IdempotentRequest, StoredAnswer } from '../port.js';
import { asStorageError } from '../../sqlite/errors.js';

/**
 * Idempotency keys in their own file (`idempotency.db` in DATA_DIR). A claim is one IMMEDIATE
 * transaction, so the API processes sharing the file claim a key one at a time. Answers older
 * than their retention are overwritten by the next claim and swept now and then.
 */

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS idempotency_keys (
    workspace_id TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    fingerprint  TEXT    NOT NULL,
    created      INTEGER NOT NULL,
    lease_until  INTEGER NOT NULL,
    status       INTEGER,
    body         TEXT,
    PRIMARY KEY (workspace_id, key)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created);
`;

interface Row {
  fingerprint: string;
  created: number;
  lease_until: number;
  status: number | null;
  body: string | null;
}

/** A sweep of expired answers every this many claims. */
const SWEEP_EVERY = 1000;

export function openSqliteIdempotencyStore(options: { path: string }): IdempotencyStore {
  const db: Database.Database = openSqliteFile(options.path, { synchronous: 'FULL' });
  applySchema(db, SCHEMA);
  const select = db.prepare<[string, string], Row>('SELECT fingerprint, created, lease_until, status, body FROM idempotency_keys WHERE workspace_id = ? AND key = ?');
  const upsert = db.prepare<[string, string, string, number, number]>(
    `INSERT INTO idempotency_keys (workspace_id, key, fingerprint, created, lease_until, status, body) VALUES (?, ?, ?, ?, ?, NULL, NULL)
     ON CONFLICT (workspace_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, created = excluded.created,
       lease_until = excluded.lease_until, status = NULL, body = NULL`,
  );
  const finish = db.prepare<[number, string, string, string, string]>(
    'UPDATE idempotency_keys SET status = ?, body = ? WHERE workspace_id = ? AND key = ? AND fingerprint = ? AND status IS NULL',
  );
  const remove = db.prepare<[string, string, string]>('DELETE FROM idempotency_keys WHERE workspace_id = ? AND key = ? AND fingerprint = ? AND status IS NULL');
  const sweep = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE created < ?');
  let claims = 0;

  const claimTx = db.transaction((request: IdempotentRequest, options: ClaimOptions): Claim => {
    const now = options.now.getTime();
    if (++claims % SWEEP_EVERY === 0) sweep.run(now - options.retainMs);
    const row = select.get(request.workspaceId, request.key);
    const expired = !row || row.created < now - options.retainMs;
    if (row && !expired) {
      if (row.fingerprint !== request.fingerprint) return { kind: 'mismatch' };
      if (row.status !== null) return { kind: 'replay', answer: { status: row.status, body: row.body ?? '' } };
      if (row.lease_until > now) return { kind: 'running' };
    }
    upsert.run(request.workspaceId, request.key, request.fingerprint, now, now + options.leaseMs);
    return { kind: 'run' };
  });

  return {
    async claim(request, options) {
      try {
        return claimTx.immediate(request, options);
      } catch (error) {
        throw asStorageError(error);
      }
    },
    // Kept from the first request on (PRODUCT.md: "within 24 hours"), not from its answer.
    async complete(request, answer: StoredAnswer) {
      try {
        finish.run(answer.status, answer.body, request.workspaceId, request.key, request.fingerprint);
      } catch (error) {
        throw asStorageError(error);
      }
    },
    async release(request) {
      try {
        remove.run(request.workspaceId, request.key, request.fingerprint);
      } catch (error) {
        throw asStorageError(error);
      }
    },
    async close() {
      db.close();
    },
  };
}

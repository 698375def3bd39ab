import { migrate } from '../../postgres/migrate.js';
import type { Pool } from '../../postgres/pool.js';
import { mappingPostgresErrors } from '../../postgres/errors.js';
import type { Claim, ClaimOptions, IdempotencyStore, IdempotentRequest } from '../port.js';

/**
 * Idempotency keys on PostgreSQL: one row per (workspace, key). A claim is one INSERT ... ON
 * CONFLICT DO UPDATE whose WHERE takes the row over only when its answer's retention is over or
 * its holder's lease ran out: the server decides between concurrent claims of one key (the later
 * one waits on the row lock and then sees the winner's row), so of two processes exactly one runs.
 * Times are the caller's (`options.now`), not the server's clock, as in the other adapters.
 */

const MIGRATION = {
  component: 'IdempotencyStore',
  steps: [
    `CREATE TABLE csr_idempotency_keys (
       workspace_id text        NOT NULL,
       key          text        NOT NULL,
       fingerprint  text        NOT NULL,
       created      timestamptz NOT NULL,
       lease_until  timestamptz NOT NULL,
       status       integer,
       body         text,
       PRIMARY KEY (workspace_id, key)
     )`,
    'CREATE INDEX csr_idempotency_keys_created ON csr_idempotency_keys (created)',
  ],
};

/** A sweep of expired answers every this many claims of one process. */
const SWEEP_EVERY = 1000;

interface Row {
  fingerprint: string;
  created: Date;
  status: number | null;
  body: string | null;
}

export async function openPostgresIdempotencyStore(options: { pool: Pool }): Promise<IdempotencyStore> {
  const { pool } = options;
  await migrate(pool, MIGRATION);
  let claims = 0;

  async function claim(request: IdempotentRequest, claimOptions: ClaimOptions): Promise<Claim> {
    const now = claimOptions.now;
    const oldest = new Date(now.getTime() - claimOptions.retainMs);
    if (++claims % SWEEP_EVERY === 0) await pool.query('DELETE FROM csr_idempotency_keys WHERE created < $1', [oldest]);
    // A row released or expired between the two statements below is claimed on the next attempt.
    for (let attempt = 0; attempt < 3; attempt++) {
      const taken = await pool.query(
        `INSERT INTO csr_idempotency_keys AS k (workspace_id, key, fingerprint, created, lease_until, status, body)
         VALUES ($1, $2, $3, $4, $5, NULL, NULL)
         ON CONFLICT (workspace_id, key) DO UPDATE
           SET fingerprint = EXCLUDED.fingerprint, created = EXCLUDED.created, lease_until = EXCLUDED.lease_until, status = NULL, body = NULL
           WHERE k.created < $6 OR (k.fingerprint = EXCLUDED.fingerprint AND k.status IS NULL AND k.lease_until <= EXCLUDED.created)
         RETURNING 1`,
        [request.workspaceId, request.key, request.fingerprint, now, new Date(now.getTime() + claimOptions.leaseMs), oldest],
      );
      if (taken.rowCount === 1) return { kind: 'run' };
      const found = await pool.query<Row>('SELECT fingerprint, created, status, body FROM csr_idempotency_keys WHERE workspace_id = $1 AND key = $2', [
        request.workspaceId,
        request.key,
      ]);
      const row = found.rows[0];
      if (!row || row.created < oldest) continue;
      if (row.fingerprint !== request.fingerprint) return { kind: 'mismatch' };
      if (row.status !== null) return { kind: 'replay', answer: { status: row.status, body: row.body ?? '' } };
      return { kind: 'running' };
    }
    return { kind: 'running' };
  }

  return mappingPostgresErrors<IdempotencyStore>({
    claim,
    // Kept from the first request on (PRODUCT.md: "within 24 hours"), not from its answer.
    async complete(request, answer) {
      await pool.query(
        'UPDATE csr_idempotency_keys SET status = $1, body = $2 WHERE workspace_id = $3 AND key = $4 AND fingerprint = $5 AND status IS NULL',
        [answer.status, answer.body, request.workspaceId, request.key, request.fingerprint],
      );
    },
    async release(request) {
      await pool.query('DELETE FROM csr_idempotency_keys WHERE workspace_id = $1 AND key = $2 AND fingerprint = $3 AND status IS NULL', [
        request.workspaceId,
        request.key,
        request.fingerprint,
      ]);
    },
    // The pool is the process's, shared by every adapter: its owner ends it.
    async close() {},
  });
}

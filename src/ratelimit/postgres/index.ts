import { migrate } from '../../postgres/migrate.js';
import { inTransaction, type Pool } from '../../postgres/pool.js';
import { grant, refill, type Grant, type RateLimitStore, type RefusalStats, type Take } from '../port.js';

/**
 * The rate-limit store on PostgreSQL: one bucket row per key in the shared database, so a key has
 * one bucket across every process and machine of the deployment (docs/sync-clients.md). A take
 * locks its row for one short transaction; processes take tokens in batches (limiter.ts), so the
 * database sees one take per batch, not a write per request. Buckets need no durability beyond
 * that: a lost row forgets spent tokens at worst, so the table is UNLOGGED (no WAL, no fsync).
 */

const MIGRATION = {
  component: 'ratelimits',
  steps: [
    `CREATE UNLOGGED TABLE csr_rate_buckets (
       key_id          text PRIMARY KEY,
       tokens          double precision NOT NULL,
       counted_at      bigint NOT NULL,
       refused_hour    bigint NOT NULL DEFAULT 0,
       refused_now     integer NOT NULL DEFAULT 0,
       refused_before  integer NOT NULL DEFAULT 0,
       refused_last_at bigint
     )`,
  ],
};

const HOUR_MS = 3_600_000;

interface BucketRow {
  tokens: number;
  counted_at: string;
  refused_hour: string;
  refused_now: number;
  refused_before: number;
  refused_last_at: string | null;
}

export async function openPostgresRateLimitStore(options: { pool: Pool }): Promise<RateLimitStore> {
  const { pool } = options;
  await migrate(pool, MIGRATION);
  return {
    take: (take) =>
      inTransaction(pool, async (client): Promise<Grant> => {
        // The row exists before it is locked, so two first takes of a key cannot both miss it.
        await client.query('INSERT INTO csr_rate_buckets (key_id, tokens, counted_at) VALUES ($1, $2, $3) ON CONFLICT (key_id) DO NOTHING', [
          take.keyId,
          take.limit.burst,
          take.now,
        ]);
        const row = (await client.query<BucketRow>('SELECT * FROM csr_rate_buckets WHERE key_id = $1 FOR UPDATE', [take.keyId])).rows[0]!;
        const result = grant(refill(row.tokens, Number(row.counted_at), take.limit, take.now), take);
        const refused = countRefused(row, take);
        await client.query(
          `UPDATE csr_rate_buckets SET tokens = $2, counted_at = GREATEST(counted_at, $3), refused_hour = $4, refused_now = $5, refused_before = $6, refused_last_at = $7
           WHERE key_id = $1`,
          [take.keyId, result.left, take.now, refused.hour, refused.now, refused.before, refused.lastAt],
        );
        return result;
      }),
    async refusals(keyIds) {
      const stats = new Map<string, RefusalStats>();
      if (keyIds.length === 0) return stats;
      const rows = await pool.query<BucketRow & { key_id: string }>('SELECT * FROM csr_rate_buckets WHERE key_id = ANY($1)', [keyIds]);
      const now = Date.now();
      for (const row of rows.rows) stats.set(row.key_id, refusalsOf(row, now));
      return stats;
    },
    // The pool is the process's, ended by src/backends.ts.
    async close() {},
  };
}

/** Refusals per clock hour, the current one and the one before, as the embedded store counts them. */
function countRefused(row: BucketRow, take: Take): { hour: number; now: number; before: number; lastAt: number | null } {
  const hour = Math.floor(take.now / HOUR_MS);
  const rowHour = Number(row.refused_hour);
  return {
    hour,
    now: (rowHour === hour ? row.refused_now : 0) + take.refused,
    before: rowHour === hour ? row.refused_before : rowHour === hour - 1 ? row.refused_now : 0,
    lastAt: take.refused > 0 ? take.now : row.refused_last_at === null ? null : Number(row.refused_last_at),
  };
}

function refusalsOf(row: BucketRow, now: number): RefusalStats {
  const hour = Math.floor(now / HOUR_MS);
  const rowHour = Number(row.refused_hour);
  const recent = rowHour === hour ? row.refused_now + row.refused_before : rowHour === hour - 1 ? row.refused_now : 0;
  return { recent, lastAt: row.refused_last_at === null ? null : new Date(Number(row.refused_last_at)).toISOString() };
}

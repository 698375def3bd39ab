import { applySchema, openSqliteFile } from '../../sqlite/file.js';
import { grant, refill, type Grant, type RateLimitStore, type RefusalStats, type Take } from '../port.js';

/**
 * The embedded rate-limit store: a file of its own in DATA_DIR that every API process of the
 * machine opens, so a key has one bucket however many processes serve it. Not the Setup file:
 * its key cache is dropped whenever that file changes, and buckets change all the time. Buckets
 * need no durability (a crash at worst forgets spent tokens), so commits are not fsynced (WAL, synchronous NORMAL).
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS buckets (
  key_id TEXT PRIMARY KEY,
  tokens REAL NOT NULL,
  counted_at INTEGER NOT NULL,
  refused_hour INTEGER NOT NULL DEFAULT 0,
  refused_now INTEGER NOT NULL DEFAULT 0,
  refused_before INTEGER NOT NULL DEFAULT 0,
  refused_last_at INTEGER
);
`;

const HOUR_MS = 3_600_000;

interface BucketRow {
  tokens: number;
  counted_at: number;
  refused_hour: number;
  refused_now: number;
  refused_before: number;
  refused_last_at: number | null;
}

export function openSqliteRateLimitStore(options: { path: string }): RateLimitStore {
  const db = openSqliteFile(options.path, { synchronous: 'NORMAL' });
  applySchema(db, SCHEMA);
  const read = db.prepare('SELECT * FROM buckets WHERE key_id = ?');
  const write = db.prepare(
    `INSERT INTO buckets (key_id, tokens, counted_at, refused_hour, refused_now, refused_before, refused_last_at)
     VALUES (@keyId, @tokens, @countedAt, @hour, @now, @before, @lastAt)
     ON CONFLICT (key_id) DO UPDATE SET tokens = @tokens, counted_at = @countedAt, refused_hour = @hour,
       refused_now = @now, refused_before = @before, refused_last_at = @lastAt`,
  );

  const takeTokens = db.transaction((take: Take): Grant => {
    const row = read.get(take.keyId) as BucketRow | undefined;
    const available = row ? refill(row.tokens, row.counted_at, take.limit, take.now) : take.limit.burst;
    const result = grant(available, take);
    const refused = countRefused(row, take);
    write.run({ keyId: take.keyId, tokens: result.left, countedAt: take.now, ...refused });
    return result;
  });

  return {
    take: (take) => takeTokens.immediate(take),
    async refusals(keyIds) {
      const now = Date.now();
      const stats = new Map<string, RefusalStats>();
      for (const keyId of keyIds) {
        const row = read.get(keyId) as BucketRow | undefined;
        if (row) stats.set(keyId, refusalsOf(row, now));
      }
      return stats;
    },
    async close() {
      db.close();
    },
  };
}

/** Refusals are counted per clock hour, the current one and the one before: "recent" is the last hour or two. */
function countRefused(row: BucketRow | undefined, take: Take): { hour: number; now: number; before: number; lastAt: number | null } {
  const hour = Math.floor(take.now / HOUR_MS);
  const same = row?.refused_hour === hour;
  const previous = row?.refused_hour === hour - 1;
  return {
    hour,
    now: (same ? row.refused_now : 0) + take.refused,
    before: same ? row.refused_before : previous ? row!.refused_now : 0,
    lastAt: take.refused > 0 ? take.now : (row?.refused_last_at ?? null),
  };
}

function refusalsOf(row: BucketRow, now: number): RefusalStats {
  const hour = Math.floor(now / HOUR_MS);
  const recent = row.refused_hour === hour ? row.refused_now + row.refused_before : row.refused_hour === hour - 1 ? row.refused_now : 0;
  return { recent, lastAt: row.refused_last_at === null ? null : new Date(row.refused_last_at).toISOString() };
}

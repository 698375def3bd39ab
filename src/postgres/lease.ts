import pg from 'pg';
import { migrate } from './migrate.js';
import type { Pool, PoolClient } from './pool.js';

/**
 * A lease in a table, so that exactly one projector runs at a time across processes and machines.
 * One row per lease: holder, fencing token, expiry by the server's clock. Taking or renewing is one
 * conditional upsert the server decides (free, expired, or already ours); the token grows by one
 * each time the lease changes hands. The holder renews every ttl/4; a holder that dies stops
 * renewing, and a candidate takes the lease over once it has expired (within ttl + one try).
 *
 * Not a session advisory lock: behind a transaction-pooling proxy (PgBouncer, RDS Proxy) a session
 * lock is taken on whichever server connection the statement ran on and silently belongs to
 * nobody after it (Emmett issue 328). Every statement here stands alone.
 *
 * Fencing: `fence(client)` runs inside the projector's checkpoint transaction. It reads the lease row
 * FOR SHARE and fails unless this holder, with this token, still holds an unexpired lease; the row
 * lock then keeps a take-over waiting until that transaction has committed, so a paused holder
 * that wakes after losing the lease can never commit a batch.
 */

/** The SQLSTATE csr_lease_fence raises (class CS: this service's own). */
const LEASE_LOST_CODE = 'CSL01';

const MIGRATION = {
  component: 'leases',
  steps: [
    'CREATE TABLE csr_leases (name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL)',
    // The fence as an expression (fenceSql): it raises, so that a statement holding it fails and its
    // transaction cannot commit, even one sent together with its COMMIT.
    `CREATE FUNCTION csr_lease_fence(lease text, by_holder text, with_token bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
     BEGIN
       PERFORM 1 FROM csr_leases WHERE name = lease AND holder = by_holder AND token = with_token AND expires_at > clock_timestamp() FOR SHARE;
       IF NOT FOUND THEN
         RAISE EXCEPTION 'this process no longer holds the % lease; another took it over', lease USING ERRCODE = '${LEASE_LOST_CODE}';
       END IF;
       RETURN true;
     END $$`,
  ],
};

export class LeaseLost extends Error {
  constructor(name: string) {
    super(`this process no longer holds the ${name} lease; another took it over`);
  }
}

/** Takes the lease, or renews it when `holder` holds it: the token held, or null when another holds it. */
export async function acquireLease(pool: Pool, name: string, holder: string, ttlMs: number): Promise<string | null> {
  const result = await pool.query<{ token: string }>(
    `INSERT INTO csr_leases AS l (name, holder, token, expires_at) VALUES ($1, $2, 1, clock_timestamp() + make_interval(secs => $3::double precision / 1000))
     ON CONFLICT (name) DO UPDATE SET
       holder = EXCLUDED.holder,
       token = CASE WHEN l.holder = EXCLUDED.holder THEN l.token ELSE l.token + 1 END,
       expires_at = EXCLUDED.expires_at
     WHERE l.holder = EXCLUDED.holder OR l.expires_at <= clock_timestamp()
     RETURNING token`,
    [name, holder, ttlMs],
  );
  return result.rows[0]?.token ?? null;
}

/** Ends the lease at once (when `holder` holds it), so that a candidate takes it without waiting; the token stays, the next holder's is higher. */
export async function releaseLease(pool: Pool, name: string, holder: string): Promise<void> {
  await pool.query("UPDATE csr_leases SET expires_at = clock_timestamp() - interval '1 millisecond' WHERE name = $1 AND holder = $2", [name, holder]);
}

export interface LeaseKeeper {
  readonly held: boolean;
  /** For the checkpoint transaction: throws LeaseLost unless this keeper still holds the lease. */
  fence(client: PoolClient): Promise<void>;
  /**
   * The same check as an SQL expression (values inlined) for a statement of the checkpoint
   * transaction, which then fails unless this keeper still holds the lease, and keeps a take-over
   * waiting until that transaction ends. Throws LeaseLost when this keeper knows it holds none.
   */
  fenceSql(): string;
  /** Stops trying, releases the lease if held, and reports the loss through onChange. */
  stop(): Promise<void>;
}

export interface KeepLeaseOptions {
  name: string;
  holder: string;
  /** How long the lease lasts without renewal: the take-over time after a crash (default 6 s). */
  ttlMs?: number;
  onChange(held: boolean): void | Promise<void>;
  logger?: { warn(details: object, message: string): void };
}

export async function prepareLeases(pool: Pool): Promise<void> {
  await migrate(pool, MIGRATION);
}

/** Keeps trying to take the lease and keeps renewing it while held. */
export function keepLease(pool: Pool, options: KeepLeaseOptions): LeaseKeeper {
  const ttlMs = options.ttlMs ?? 6_000;
  const everyMs = Math.max(50, Math.floor(ttlMs / 4));
  let token: string | null = null;
  let held = false;
  /** Local time by which the lease surely lapsed, counted from when the last successful try was sent. */
  let lapsesAt = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  /** The table is made once per keeper: a migration per renewal cost three round trips and a schema lock every ttl/4. */
  let prepared = false;

  async function change(next: boolean): Promise<void> {
    if (next === held) return;
    held = next;
    if (!next) token = null;
    await options.onChange(next);
  }

  async function attempt(): Promise<void> {
    const sentAt = performance.now();
    try {
      if (!prepared) {
        await prepareLeases(pool);
        prepared = true;
      }
      const taken = await acquireLease(pool, options.name, options.holder, ttlMs);
      if (stopped) return;
      if (taken !== null) {
        token = taken;
        lapsesAt = sentAt + ttlMs;
      }
      await change(taken !== null);
    } catch (error) {
      options.logger?.warn({ err: error, lease: options.name }, 'lease attempt failed');
      // Without an answer the lease is ours only as long as it surely lasts.
      if (held && performance.now() >= lapsesAt) await change(false);
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = attempt().finally(schedule);
    }, everyMs);
  }

  running = attempt().finally(schedule);

  function fenceSql(): string {
    const mine = token;
    if (!held || mine === null) throw new LeaseLost(options.name);
    return `csr_lease_fence(${pg.escapeLiteral(options.name)}, ${pg.escapeLiteral(options.holder)}, ${pg.escapeLiteral(mine)}::bigint)`;
  }

  return {
    get held() {
      return held;
    },
    async fence(client) {
      const condition = fenceSql();
      await client.query(`SELECT ${condition}`).catch((error: unknown) => {
        throw (error as { code?: unknown } | null)?.code === LEASE_LOST_CODE ? new LeaseLost(options.name) : error;
      });
    },
    fenceSql,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running.catch(() => undefined);
      if (held) {
        await releaseLease(pool, options.name, options.holder).catch(() => undefined);
        await change(false);
      }
    },
  };
}

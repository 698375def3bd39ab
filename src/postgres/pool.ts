import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * The one way the PostgreSQL adapters reach the server: a pool per process (every port's adapter
 * shares it), with the settings each of them relies on.
 */

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export interface PoolOptions {
  url: string;
  /** Connections at most; the adapters of one process share them. */
  max?: number;
  /** Label in pg_stat_activity, so an operator sees which role holds a connection. */
  applicationName?: string;
}

export function openPool(options: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'csr',
    // A server that went away (restart, failover) must not leave a request waiting for ever.
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection the server closed emits 'error' on the pool; without a listener Node would
  // crash the process. The next query opens a new connection.
  pool.on('error', () => {});
  // The same for a connection checked out between two queries of a transaction (the pool listens
  // only to idle ones): the server going away then made the client emit 'error' with nobody
  // listening, and the process crashed. Its next query fails, and that failure is handled.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * Runs `work` on one connection, which it opens a transaction on (BEGIN alone, or sent with its
 * first statements) and commits (COMMIT alone, or sent with its last ones): when it throws, the
 * transaction is rolled back and the error rethrown as it was.
 */
export async function onTransactionClient<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await work(client);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Runs `work` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
export function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  return onTransactionClient(pool, async (client) => {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  });
}

/** Pools behind which named statements failed (a transaction-pooling proxy that does not keep them): plain statements from then on. */
const unprepared = new WeakSet<object>();
const statementNames = new Map<string, string>();

/**
 * A statement outside any transaction as a named statement, parsed and planned once per
 * connection: on the partitioned read model the server spent more time planning a GET or a list
 * than running it, and so it did for the webhook group's claim (docs/performance.md). A write may
 * go this way too: the refusals below come before any of the statement runs, so asking again
 * cannot write twice. Behind a transaction-pooling proxy that does not keep named statements
 * (PgBouncer before 1.21, or without max_prepared_statements) the server answers that the statement
 * does not exist, or exists already, on another of its connections: the statement is asked again as a
 * plain one, and so is every later one on this pool. Only for statements of fixed columns
 * (no `SELECT *`), whose result type a migration cannot change under a cached plan.
 */
export async function preparedQuery<R extends pg.QueryResultRow>(pool: Pool, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
  if (unprepared.has(pool)) return pool.query<R>(text, values);
  try {
    return await pool.query<R>({ name: statementName(text), text, values });
  } catch (error) {
    if (!namedStatementRefused(pool, error)) throw error;
    return pool.query<R>(text, values);
  }
}

/**
 * A statement of a transaction on `client` (a connection of `pool`) as a named statement, as
 * preparedQuery does outside one: the group commit's append and a projector's read and write of
 * its records were parsed and planned again at every commit, a share of the server's time per
 * create that docs/performance.md (session 42) measures. Refused (a transaction-pooling proxy, see preparedQuery), the statement
 * fails and with it the transaction, which wrote nothing: the caller asks `namedStatementRefused`
 * and runs its transaction again, with plain statements from then on.
 */
export function transactionQuery<R extends pg.QueryResultRow>(pool: Pool, client: PoolClient, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
  if (unprepared.has(pool)) return client.query<R>(text, values);
  return client.query<R>({ name: statementName(text), text, values });
}

/**
 * Whether `error` is the server not knowing a named statement, or knowing one of that name already,
 * on a connection of `pool` that the driver believed had it (a proxy handed the client another
 * server connection): the pool then takes plain statements for good. Both refusals come before the
 * statement runs.
 */
export function namedStatementRefused(pool: Pool, error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== '26000' && code !== '42P05') return false;
  unprepared.add(pool);
  return true;
}

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `csr_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}

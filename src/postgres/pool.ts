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
 * Runs `work` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it
 * throws (the error is rethrown as it was).
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

import { expect, it } from 'vitest';
import { openPool, preparedQuery } from '../../src/postgres/pool.js';
import { describeBackend } from './backends.js';
import { postgresBackend, postgresDatabases } from './postgres.js';

/**
 * Reads as named statements (src/postgres/pool.ts): parsed once per connection, and asked again as
 * plain statements for good once a server connection does not know them, as behind a
 * transaction-pooling proxy that hands each transaction another server connection.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL named statements', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('a read is parsed once per connection, and reused', async () => {
    const pool = openPool({ url: await database(), max: 1 });
    try {
      const text = 'SELECT $1::int + 1 AS n';
      expect((await preparedQuery<{ n: number }>(pool, text, [1])).rows).toEqual([{ n: 2 }]);
      expect((await preparedQuery<{ n: number }>(pool, text, [41])).rows).toEqual([{ n: 42 }]);
      const kept = await pool.query<{ count: number }>("SELECT count(*)::int AS count FROM pg_prepared_statements WHERE statement = 'SELECT $1::int + 1 AS n'");
      expect(kept.rows).toEqual([{ count: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it('behind a connection that lost its named statements (a pooling proxy switched it), the read is answered as a plain statement, and so are the later ones', async () => {
    const pool = openPool({ url: await database(), max: 1 });
    try {
      const text = 'SELECT $1::int * 2 AS n';
      expect((await preparedQuery<{ n: number }>(pool, text, [2])).rows).toEqual([{ n: 4 }]);
      // The driver still believes the statement parsed on this connection; the server no longer has it.
      await pool.query('DEALLOCATE ALL');
      expect((await preparedQuery<{ n: number }>(pool, text, [3])).rows).toEqual([{ n: 6 }]);
      expect((await preparedQuery<{ n: number }>(pool, 'SELECT $1::int * 3 AS n', [3])).rows).toEqual([{ n: 9 }]);
      const kept = await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM pg_prepared_statements');
      expect(kept.rows).toEqual([{ count: 0 }]);
    } finally {
      await pool.end();
    }
  });
});

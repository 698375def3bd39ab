import { expect, it } from 'vitest';
import { migrate } from '../../src/postgres/migrate.js';
import { openPool } from '../../src/postgres/pool.js';
import { describeBackend } from './backends.js';
import { postgresBackend, postgresDatabases } from './postgres.js';

const backend = await postgresBackend();

describeBackend('PostgreSQL schema versions', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('runs each step once, in order, also when several processes start at once', async () => {
    const url = await database();
    const pools = [openPool({ url }), openPool({ url }), openPool({ url })];
    try {
      const steps = ['CREATE TABLE t (n integer)', 'INSERT INTO t VALUES (1)'];
      await Promise.all(pools.map((pool) => migrate(pool, { component: 'test', steps })));
      await migrate(pools[0]!, { component: 'test', steps: [...steps, 'INSERT INTO t VALUES (2)'] });
      const rows = await pools[1]!.query<{ n: number }>('SELECT n FROM t ORDER BY n');
      expect(rows.rows.map((row) => row.n)).toEqual([1, 2]);
      const version = await pools[2]!.query<{ version: number }>("SELECT version FROM csr_schema WHERE component = 'test'");
      expect(version.rows[0]!.version).toBe(3);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('refuses a schema newer than this version knows, naming the component', async () => {
    const url = await database();
    const pool = openPool({ url });
    try {
      await migrate(pool, { component: 'events', steps: ['SELECT 1', 'SELECT 2'] });
      await expect(migrate(pool, { component: 'events', steps: ['SELECT 1'] })).rejects.toThrow(/schema of events is newer \(version 2\)/);
    } finally {
      await pool.end();
    }
  });
});

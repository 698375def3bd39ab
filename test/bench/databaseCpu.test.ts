import pg from 'pg';
import { expect, it } from 'vitest';
import { databaseCpu } from '../../bench/postgres.js';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';

/**
 * The bench's PostgreSQL rows count the database server's CPU per request beside the server
 * under test's: what a backend of the measured database computes is counted, what another
 * database's backend computes meanwhile is not.
 */

const backend = await postgresBackend();

describeBackend('bench: the database server CPU of one database', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it.runIf(process.platform === 'linux')('counts the work of the measured database backends and not that of another database', async () => {
    const [measured, other] = [await database(), await database()];
    const client = new pg.Client({ connectionString: measured });
    const idle = new pg.Client({ connectionString: other });
    await Promise.all([client.connect(), idle.connect()]);
    try {
      const [counted, notCounted] = [await databaseCpu(measured), await databaseCpu(other)];
      // given a backend of the measured database summing ten million numbers (about a second of CPU)
      const started = performance.now();
      await client.query('SELECT sum(i) FROM generate_series(1, 10000000) AS i');
      const wallMs = performance.now() - started;
      // then most of that time was its CPU, counted; the other database's idle backend used none of it
      const ms = (await counted())!;
      expect(ms).toBeGreaterThan(Math.min(300, wallMs / 3));
      expect(ms).toBeLessThanOrEqual(wallMs + 20);
      expect((await notCounted())!).toBeLessThan(ms / 10);
    } finally {
      await Promise.all([client.end(), idle.end()]);
    }
  });
});

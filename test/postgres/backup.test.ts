import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { client, startTestService } from '../support/service.js';
import { csrTool } from '../support/cli.js';
import { masterKeyFile } from './support.js';

/**
 * Backing up on PostgreSQL (README, "Running on PostgreSQL"; docs/operations.md): `csr backup`
 * points at pg_dump, and the documented procedure works: pg_dump of the database (while the
 * service runs), pg_restore into a new one, the service started on it serves the records.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL backup and restore', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('csr backup on PostgreSQL says to use pg_dump', async () => {
    const url = await database();
    const csr = csrTool(mkdtempSync(join(tmpdir(), 'csr-pg-backup-')), { DATABASE_URL: url, MASTER_KEY_FILE: masterKeyFile() });
    expect(await csr.fails(1, 'backup', join(tmpdir(), 'never.tar'))).toMatch(/pg_dump/);
  });

  it('pg_dump, pg_restore into a new database, start the service on it: the records are there', async () => {
    const [source, target] = [await database(), await database()];
    const env = { MASTER_KEY_FILE: masterKeyFile() };
    const before = await startTestService({ ...env, DATABASE_URL: source });
    const { key } = await (await before.workspace()).key();
    const api = client(before, key);
    const saved = await api.post('/api/v1/clients', { name: 'Kept', tier: 'SMB' });
    expect(saved.status).toBe(201);
    const dump = join(mkdtempSync(join(tmpdir(), 'csr-pg-dump-')), 'csr.dump');
    // Taken while the service runs: pg_dump reads one consistent snapshot.
    execFileSync('pg_dump', ['--format=custom', `--file=${dump}`, source]);
    await before.stop();
    execFileSync('pg_restore', ['--no-owner', `--dbname=${target}`, dump]);

    const after = await startTestService({ ...env, DATABASE_URL: target });
    try {
      const read = await client(after, key).get(`/api/v1/clients/${saved.body.ids[0]}`);
      expect(read.status).toBe(200);
      expect(read.body.data).toMatchObject({ name: 'Kept', tier: 'SMB' });
      const chain = await after.service.backends.events.checkChain({ until: await after.service.backends.events.headPosition() });
      expect(chain.firstBreak).toBeNull();
    } finally {
      await after.stop();
    }
  }, 120_000);
});

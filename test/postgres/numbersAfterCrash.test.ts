import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, it } from 'vitest';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { expectNoGap, killUnderCreates } from '../support/numbersCrash.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';
import { createPostgresKey, masterKeyFile } from './support.js';

/**
 * Issue 39 item 2 on PostgreSQL: a number's reservation, its value's claim and its record are
 * appended in one transaction (the appender writes an appendThen's groups in one commit), so a
 * server killed with SIGKILL under single creates and 900-record upserts leaves no number without
 * its record: after a restart the numbers are 1..N and the next create takes N + 1.
 */

const backend = await postgresBackend();

describeBackend('auto numbers after a crash on PostgreSQL', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);
  let server: ServerProcess | undefined;
  afterAll(async () => {
    await server?.kill();
  });

  it('leaves no number without its record when the server is killed under creates and upserts', async () => {
    const url = await database();
    const key = await createPostgresKey(url);
    const env = { DATABASE_URL: url, MASTER_KEY_FILE: masterKeyFile(), DATA_DIR: mkdtempSync(join(tmpdir(), 'csr-pg-numbers-')) };
    let acknowledged = 0;
    // Two crashes, each at another moment of the load: a window between two commits is hit more often.
    for (let round = 0; round < 2; round++) {
      server = await spawnServer(env);
      const killed = server;
      acknowledged += await killUnderCreates(client(server.url, key), () => killed.kill('SIGKILL'), 500 + 300 * round, 60_000, `#${round}`);
    }
    server = await spawnServer(env);
    await expectNoGap(client(server.url, key), acknowledged);
  }, 180_000);
});

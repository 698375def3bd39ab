import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { describeBackend } from '../contract/backends.js';
import { databaseUrl, postgresBackend } from '../contract/postgres.js';
import { repoRoot } from '../support/process.js';
import { bash, shellBlocks, startedPort } from '../support/readme.js';

/**
 * The README's "Running on PostgreSQL" blocks, pasted as a reader would: the server block in one
 * shell, the client block in another, against this machine's PostgreSQL. What is about this
 * machine rather than the guide is substituted: a database name of the test's own (made by the
 * block's own createdb, dropped after), the master key and the dump in a temporary folder instead
 * of the repository, and the port the server picked (PORT=0) instead of 8080.
 */

const backend = await postgresBackend();

describeBackend('README: Running on PostgreSQL', backend, (adminUrl) => {
  const database = `csr_readme_${randomBytes(4).toString('hex')}`;
  const folder = mkdtempSync(join(tmpdir(), 'csr-readme-pg-'));
  let server: ReturnType<typeof bash> | null = null;
  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await once(server, 'exit');
    }
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    for (const name of [database, `${database}_restored`]) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  const here = (code: string, port?: number) => {
    let local = code
      .replaceAll('csr_restored', `${database}_restored`)
      .replaceAll('-U postgres csr ', `-U postgres ${database} `)
      .replaceAll('5432/csr ', `5432/${database} `)
      .replaceAll('$PWD/master.key', join(folder, 'master.key'))
      .replaceAll('> master.key', `> ${join(folder, 'master.key')}`)
      .replaceAll('csr.dump', join(folder, 'csr.dump'));
    if (port !== undefined) local = local.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
    return local;
  };

  it('starts the service on PostgreSQL, writes through it, backs up and restores into a new database', async () => {
    const blocks = shellBlocks();
    const serverCode = blocks.find((block) => block.mark === 'test: postgres-server')!.code;
    const clientCode = blocks.find((block) => block.mark === 'test: postgres-client')!.code;
    // `npm start` without its prestart build: the suite's setup built dist/ (test/house/readme.test.ts says why).
    const runnable = here(serverCode).replace(/^npm start\b/m, 'exec npm start --silent --ignore-scripts');
    expect(runnable).toContain(database);
    // The blocks export DATABASE_URL themselves; one the test run has must not reach them first.
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', LOG_FORMAT: 'json', DATA_DIR: join(folder, 'data') };
    delete env.DATABASE_URL;
    server = bash(runnable, env);
    const port = await startedPort(server);

    const client = bash(here(clientCode, port), env);
    const [code] = await once(client, 'close');
    expect(code, client.output()).toBe(0);
    expect(client.output()).toMatch(/"created":1/);
    expect(existsSync(join(repoRoot, 'csr.dump'))).toBe(false);
    expect(existsSync(join(repoRoot, 'master.key'))).toBe(false);

    // The restored database holds the record's event.
    const restored = new pg.Client({ connectionString: databaseUrl(adminUrl, `${database}_restored`) });
    await restored.connect();
    try {
      const rows = await restored.query<{ n: string }>("SELECT count(*) AS n FROM csr_events WHERE type = 'RecordCreated'");
      expect(Number(rows.rows[0]!.n)).toBe(1);
    } finally {
      await restored.end();
    }
  }, 120_000);
});

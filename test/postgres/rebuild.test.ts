import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { RECORDS_VERSION } from '../../projections/recordProjection.js';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { csrTool } from '../support/cli.js';
import { dump, loadWhile, seed } from '../support/ops.js';
import { client } from '../support/service.js';
import { startRole, type RoleProcess } from './processes.js';
import { createPostgresKey, masterKeyFile } from './support.js';

/**
 * `csr projections rebuild` on PostgreSQL, as separate processes: a server with every role under a
 * write and read load, and the CLI filling a generation beside the live one (its filter keys staged
 * until it has caught up, src/readstore/postgres/stagedKeys.ts), then switching to it. No request
 * fails, writes stay read-your-writes, and the rebuilt read model answers what a second rebuild
 * from the log alone answers.
 */

const backend = await postgresBackend();

const servers: RoleProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.kill();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describeBackend('csr projections rebuild on PostgreSQL', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('rebuilds beside a server under load: no failed request, read-your-writes, filters and totals as a rebuild from the log alone', async () => {
    const url = await database();
    const env = { DATABASE_URL: url, MASTER_KEY_FILE: masterKeyFile() };
    const key = await createPostgresKey(url);
    const server = await startRole('api,projector,dispatcher', env);
    servers.push(server);
    const api = client(server.url!, key);
    await seed(api, 400);
    const dir = mkdtempSync(join(tmpdir(), 'csr-pg-rebuild-'));
    dirs.push(dir);
    const csr = csrTool(dir, env);

    const { result: rebuild, seen } = await loadWhile(api, { path: '/api/v1/billing?status=Sent&limit=50', atLeast: 390 }, () => csr.run('projections', 'rebuild', 'records', '--json'));
    const { failures, requests } = seen;
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(JSON.parse(rebuild.stdout)).toMatchObject({ projection: 'records', version: RECORDS_VERSION.current, generation: 2, resumed: false });
    expect(failures, server.output().split('\n').filter((line) => line.includes('"level":50')).join('\n')).toEqual([]);
    expect(requests).toBeGreaterThan(20);

    // The promoted generation's keys are its indexed partition; nothing staged is left.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const tables = await admin.query<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relname ~ '^csr_record_keys_' AND relkind IN ('r', 'p') ORDER BY 1");
      expect(tables.rows.map((row) => row.name)).toEqual(['csr_record_keys_g2']);
    } finally {
      await admin.end();
    }

    // Filters and totals of the rebuilt generation (which also followed the load) against the records themselves.
    const after = await dump(api);
    const clients = after['clients'] as { tier: string }[];
    expect(clients.length).toBeGreaterThan(400);
    for (const tier of ['SMB', 'Enterprise', 'Mid-Market']) {
      expect((await api.get(`/api/v1/clients?tier=${tier}&limit=1`)).body.total).toBe(clients.filter((record) => record.tier === tier).length);
    }
    const again = await csr.run('projections', 'rebuild', '--all', '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject([{ projection: 'records', generation: 3 }]);
    expect(await dump(api)).toEqual(after);
  }, 180_000);
});

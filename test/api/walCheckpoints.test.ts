import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Sqlite } from '../../src/sqlite/driver.js';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';
import { until } from '../support/until.js';

/**
 * The server's WAL checkpointer thread: what it commits reaches the database files themselves
 * within moments, where SQLite alone would leave it in the WAL until 10,000 pages had gathered.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-checkpoints-'));
const copies = mkdtempSync(join(tmpdir(), 'csr-checkpoints-copies-'));
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(copies, { recursive: true, force: true });
});

/** `sql`'s count in a copy of the database file alone, without its WAL; -1 while a checkpoint is halfway through it. */
function countInFileAlone(file: string, sql: string): number {
  const copy = join(copies, file);
  rmSync(copy, { force: true });
  copyFileSync(join(dataDir, file), copy);
  try {
    const db = new Sqlite(copy);
    try {
      return (db.prepare(sql).get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return -1;
  }
}

describe('WAL checkpoints', () => {
  it('copies what the server commits from the WAL into the database files while it runs', async () => {
    const csr = csrTool(dataDir);
    await csr.json('workspaces', 'create', 'checkpoints');
    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'checkpoints', '--name', 'load');
    server = await spawnServer({ DATA_DIR: dataDir });
    const records = Array.from({ length: 50 }, (_, i) => ({ name: `Checkpointed ${i}` }));
    const saved = await client(server.url, key).post('/api/v1/clients', records);
    expect(saved.status).toBe(201);

    const inFiles = () =>
      countInFileAlone('events.db', "SELECT COUNT(*) AS n FROM events WHERE type = 'RecordCreated'") === records.length &&
      countInFileAlone('read.db', 'SELECT COUNT(*) AS n FROM documents') === records.length;
    await until(inFiles, 20_000, 'the 50 records in events.db and read.db without their WAL');
  }, 60_000);
});

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applySchema, openSqliteFile } from '../../src/sqlite/file.js';

/** The role threads of a server starting on a new DATA_DIR create their tables in the same files at once. */

const dir = mkdtempSync(join(tmpdir(), 'csr-schema-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Another process that holds the write lock while it creates a table, and commits `ms` after the
 * file `go` appears: this process writes `go` just before its own schema change, so the lock is
 * still held when that change begins, however late this process runs.
 */
async function schemaWriter(path: string, go: string, ms: number): Promise<{ done: Promise<void> }> {
  const script = `
    const Sqlite = require(Number(process.versions.napi) >= 10 ? 'better-sqlite3' : 'better-sqlite3-node20');
    const { existsSync, writeSync } = require('node:fs');
    const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    const db = new Sqlite(process.argv[1], { timeout: 5000 });
    db.pragma('journal_mode = WAL');
    db.exec('BEGIN IMMEDIATE; CREATE TABLE other (id INTEGER PRIMARY KEY)');
    writeSync(1, 'locked\\n');
    for (const giveUp = Date.now() + 60000; !existsSync(process.argv[2]) && Date.now() < giveUp; ) pause(5);
    pause(Number(process.argv[3]));
    db.exec('COMMIT');
  `;
  const child = spawn(process.execPath, ['-e', script, path, go, String(ms)], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return { done };
}

describe('applySchema', () => {
  it('waits for another process that is changing the schema, then creates its own tables beside it', async () => {
    const path = join(dir, 'safe.db');
    openSqliteFile(path, { synchronous: 'NORMAL' }).close();
    const db = openSqliteFile(path, { synchronous: 'NORMAL' });
    const go = join(dir, 'go');
    const writer = await schemaWriter(path, go, 300);
    const started = Date.now();
    writeFileSync(go, '');
    applySchema(db, 'CREATE TABLE IF NOT EXISTS mine (id INTEGER PRIMARY KEY); CREATE INDEX IF NOT EXISTS mine_id ON mine (id);');
    // It waited for the other's commit (300 ms after it was told to go) instead of failing.
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    await writer.done;
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    expect(tables).toEqual([{ name: 'mine' }, { name: 'other' }]);
    db.close();
  });
});

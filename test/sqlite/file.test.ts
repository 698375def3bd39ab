import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { Sqlite } from '../../src/sqlite/driver.js';
import { openSqliteFile } from '../../src/sqlite/file.js';
import { repoRoot } from '../support/process.js';

/** How every embedded store opens its file (`src/sqlite/file.ts`), with other processes at it. */

const dir = mkdtempSync(join(tmpdir(), 'csr-sqlite-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Another process writing `path` (not yet in WAL mode) until `ms` after the file `go` appears;
 * resolves once it holds the write lock. This process writes `go` just before it opens the file,
 * so the other write still lasts then, however late this process runs.
 */
async function writeElsewhere(path: string, go: string, ms: number): Promise<void> {
  const writer = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { existsSync } from 'node:fs';
       import { Sqlite } from './dist/src/sqlite/driver.js';
       const db = new Sqlite(${JSON.stringify(path)}, { timeout: 5000 });
       db.exec('BEGIN IMMEDIATE');
       db.exec('INSERT INTO t VALUES (1)');
       console.log('writing');
       const giveUp = Date.now() + 60000;
       const commit = () => { db.exec('COMMIT'); db.close(); };
       const waitForGo = () => (existsSync(${JSON.stringify(go)}) || Date.now() > giveUp ? setTimeout(commit, ${ms}) : setTimeout(waitForGo, 5));
       waitForGo();`,
    ],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((resolve, reject) => {
    writer.stdout!.once('data', resolve);
    writer.once('exit', (code) => reject(new Error(`the writer exited with ${code}`)));
  });
}

it('switches a file to WAL while another process is writing it (as role threads starting on a new DATA_DIR do)', async () => {
  const path = join(dir, 'new.db');
  const created = new Sqlite(path);
  created.exec('CREATE TABLE t (x)');
  created.close();
  const go = join(dir, 'go');
  await writeElsewhere(path, go, 200);

  // SQLite refuses the switch at once while the other write lasts; the opener tries again.
  writeFileSync(go, '');
  const db = openSqliteFile(path, { synchronous: 'FULL' });
  expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
  expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 1 });
  db.close();
});

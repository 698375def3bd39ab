import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer } from '../support/process.js';

/** The master key (issue 32 item 2): made 0600 in DATA_DIR on first start; a clear start-up error when unreadable or wrong. */

const dir = mkdtempSync(join(tmpdir(), 'csr-master-key-'));
const dataDir = join(dir, 'data');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the master key', () => {
  it('is made on first start in DATA_DIR with mode 0600, and kept', async () => {
    await csrTool(dataDir).json('workspaces', 'create', 'first');
    const path = join(dataDir, 'master.key');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const key = readFileSync(path, 'utf8');
    expect(key).toMatch(/^[0-9a-f]{64}\n$/);
    await csrTool(dataDir).json('workspaces', 'list');
    expect(readFileSync(path, 'utf8')).toBe(key);
    // Given explicitly, the same key works.
    await csrTool(dataDir, { MASTER_KEY_FILE: path }).json('workspaces', 'list');
  }, 60_000);

  it('missing, unreadable, malformed or another key: a clear error, exit code 1', async () => {
    const missing = join(dir, 'missing.key');
    expect(await csrTool(dataDir, { MASTER_KEY_FILE: missing }).fails(1, 'workspaces', 'list')).toContain(`cannot read the master key MASTER_KEY_FILE=${missing}: ENOENT`);
    const malformed = join(dir, 'malformed.key');
    writeFileSync(malformed, 'not a key\n');
    expect(await csrTool(dataDir, { MASTER_KEY_FILE: malformed }).fails(1, 'workspaces', 'list')).toContain('is not a key: it must hold 64 hex digits');
    const other = join(dir, 'other.key');
    writeFileSync(other, `${randomBytes(32).toString('hex')}\n`);
    expect(await csrTool(dataDir, { MASTER_KEY_FILE: other }).fails(1, 'workspaces', 'list')).toContain("is not the one this store's personal data was encrypted with");
    if (process.getuid?.() !== 0) {
      const unreadable = join(dir, 'unreadable.key');
      writeFileSync(unreadable, `${randomBytes(32).toString('hex')}\n`);
      chmodSync(unreadable, 0o000);
      expect(await csrTool(dataDir, { MASTER_KEY_FILE: unreadable }).fails(1, 'workspaces', 'list')).toContain('EACCES');
    }
  }, 60_000);

  it('the server does not start with a wrong key, and says why', async () => {
    const other = join(dir, 'other-server.key');
    writeFileSync(other, `${randomBytes(32).toString('hex')}\n`);
    await expect(spawnServer({ DATA_DIR: dataDir, MASTER_KEY_FILE: other })).rejects.toThrow(/is not the one this store's personal data was encrypted with/);
  }, 60_000);
});

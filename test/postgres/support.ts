import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPool } from '../../src/postgres/pool.js';
import { openPostgresSetupStore } from '../../src/setup/postgres/index.js';
import { fingerprint, generateApiKey } from '../../src/setup/apiKeys.js';

/** Helpers of the tests that run the whole service on PostgreSQL. */

/** A master key file (64 hex digits) in a fresh folder: every process of one database shares it. */
export function masterKeyFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'csr-pg-key-'));
  const path = join(dir, 'master.key');
  writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  return path;
}

/** A workspace and a read-write API key in the database at `url`, as `csr` would make them. */
export async function createPostgresKey(url: string): Promise<string> {
  const pool = openPool({ url, max: 1 });
  try {
    const setup = await openPostgresSetupStore({ pool });
    const workspaceId = randomUUID();
    await setup.createWorkspace({ id: workspaceId, slug: `pg-${workspaceId.slice(0, 8)}`, name: 'PG', createdAt: new Date().toISOString() });
    const key = generateApiKey();
    await setup.createKey({
      id: randomUUID(), workspaceId, name: 'pg', fingerprint: fingerprint(key), access: 'read-write', objects: 'all',
      createdAt: new Date().toISOString(), lastUsedAt: null, revokedAt: null,
    });
    await setup.close();
    return key;
  } finally {
    await pool.end();
  }
}

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ValidationFailed } from '../../src/core/errors.js';
import { Sqlite } from '../../src/sqlite/driver.js';
import type { ApiKey } from '../../src/setup/port.js';
import { KEY_RECHECK_MS, openSqliteSetupStore } from '../../src/setup/sqlite/index.js';
import { setupStoreContract } from './setupstore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'csr-setupstore-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

setupStoreContract('sqlite', () => openSqliteSetupStore({ path: join(dir, 'contract.db') }));

describe('sqlite setup store', () => {
  const key = (workspaceId: string): ApiKey => ({
    id: randomUUID(),
    workspaceId,
    name: 'Zapier',
    fingerprint: 'f'.repeat(64),
    access: 'read-only',
    objects: ['clients'],
    createdAt: '2025-01-01T00:00:00.000Z',
    lastUsedAt: null,
    revokedAt: null,
  });

  it('the server sees what the csr tool writes in another process: at once when not remembered, a remembered key within KEY_RECHECK_MS', async () => {
    const path = join(dir, 'shared.db');
    const server = openSqliteSetupStore({ path });
    const cli = openSqliteSetupStore({ path });
    try {
      await cli.createWorkspace({ id: 'w1', slug: 'acme', name: 'Acme', createdAt: '2025-01-01T00:00:00.000Z' });
      const created = key('w1');
      await cli.createKey(created);
      expect(await server.keyByFingerprint(created.fingerprint)).toEqual(created);
      await server.touchKey(created.id, '2025-01-02T00:00:00.000Z');
      await cli.revokeKey(created.id, '2025-01-03T00:00:00.000Z');
      await new Promise((resolve) => setTimeout(resolve, KEY_RECHECK_MS + 1));
      expect(await server.keyByFingerprint(created.fingerprint)).toMatchObject({
        lastUsedAt: '2025-01-02T00:00:00.000Z',
        revokedAt: '2025-01-03T00:00:00.000Z',
      });
    } finally {
      await server.close();
      await cli.close();
    }
  });

  it('answers keyByFingerprintNow at once, remembered or not, and sees another process revoke a remembered key within KEY_RECHECK_MS', async () => {
    const path = join(dir, 'now.db');
    const server = openSqliteSetupStore({ path });
    const cli = openSqliteSetupStore({ path });
    try {
      await cli.createWorkspace({ id: 'w1', slug: 'acme', name: 'Acme', createdAt: '2025-01-01T00:00:00.000Z' });
      const created = key('w1');
      expect(server.keyByFingerprintNow(created.fingerprint)).toBeNull();
      await cli.createKey(created);
      expect(server.keyByFingerprintNow(created.fingerprint)).toEqual(created);
      expect(server.keyByFingerprintNow(created.fingerprint)).toEqual(created);
      await cli.revokeKey(created.id, '2025-01-03T00:00:00.000Z');
      await new Promise((resolve) => setTimeout(resolve, KEY_RECHECK_MS + 1));
      expect(server.keyByFingerprintNow(created.fingerprint)?.revokedAt).toBe('2025-01-03T00:00:00.000Z');
    } finally {
      await server.close();
      await cli.close();
    }
  });

  it('keeps everything across a reopen', async () => {
    const path = join(dir, 'reopen.db');
    const first = openSqliteSetupStore({ path });
    await first.createWorkspace({ id: 'w1', slug: 'acme', name: 'Acme', createdAt: '2025-01-01T00:00:00.000Z' });
    const created = key('w1');
    await first.createKey(created);
    await first.close();
    const second = openSqliteSetupStore({ path });
    try {
      expect(await second.workspaceBySlug('acme')).toMatchObject({ id: 'w1' });
      expect(await second.listKeys('w1')).toEqual([created]);
    } finally {
      await second.close();
    }
  });

  it('touchKey never moves lastUsedAt back (two API processes touching out of order)', async () => {
    const store = openSqliteSetupStore({ path: join(dir, 'touch.db') });
    try {
      await store.createWorkspace({ id: 'w1', slug: 'acme', name: 'Acme', createdAt: '2025-01-01T00:00:00.000Z' });
      const created = key('w1');
      await store.createKey(created);
      await store.touchKey(created.id, '2025-01-05T00:00:00.000Z');
      await store.touchKey(created.id, '2025-01-04T00:00:00.000Z');
      expect((await store.keyById(created.id))?.lastUsedAt).toBe('2025-01-05T00:00:00.000Z');
    } finally {
      await store.close();
    }
  });

  it('refuses keys and users of a workspace that does not exist', async () => {
    const store = openSqliteSetupStore({ path: join(dir, 'orphans.db') });
    try {
      await expect(store.createKey(key('missing'))).rejects.toBeInstanceOf(ValidationFailed);
      await expect(
        store.addUser({ id: 'u1', workspaceId: 'missing', name: 'Ana', email: 'ana@x.test', createdAt: '2025-01-01T00:00:00.000Z' }),
      ).rejects.toBeInstanceOf(ValidationFailed);
    } finally {
      await store.close();
    }
  });
});

describe('sqlite setup store made before rate limits', () => {
  it('gains the rate limit column, keeping its keys', async () => {
    const path = join(dir, 'before-rate-limits.db');
    const old = new Sqlite(path);
    old.exec(`CREATE TABLE workspaces (id TEXT PRIMARY KEY, slug TEXT NOT NULL UNIQUE, name TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE TABLE api_keys (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL REFERENCES workspaces (id), name TEXT NOT NULL, fingerprint TEXT NOT NULL UNIQUE,
        access TEXT NOT NULL, objects TEXT NOT NULL, created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT);
      INSERT INTO workspaces VALUES ('w1', 'old', 'Old', '2025-01-01T00:00:00.000Z');
      INSERT INTO api_keys VALUES ('k1', 'w1', 'Old key', '${'a'.repeat(64)}', 'read-write', '"all"', '2025-01-01T00:00:00.000Z', NULL, NULL);`);
    old.close();
    const store = openSqliteSetupStore({ path });
    try {
      expect((await store.keyById('k1'))?.rateLimit).toBeUndefined();
      expect((await store.setKeyRateLimit('k1', '20/s'))?.rateLimit).toBe('20/s');
    } finally {
      await store.close();
    }
  });
});

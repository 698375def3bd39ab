import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationFailed } from '../../src/core/errors.js';
import { NUL_TEXT_MESSAGE } from '../../src/postgres/errors.js';
import { openPostgresSetupStore } from '../../src/setup/postgres/index.js';
import { KEY_TRUST_MS } from '../../src/setup/postgres/keyCache.js';
import { describeBackend } from './backends.js';
import { postgresBackend, postgresDatabases } from './postgres.js';
import { onOwnPool } from './postgresStores.js';
import { setupStoreContract } from './setupstore.contract.js';
import { eventually } from '../support/until.js';

/**
 * The SetupStore contract against a real PostgreSQL (DATABASE_URL or the local server; skipped
 * with one line otherwise, see ./postgres.ts), in a database of its own per store.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL setup store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  setupStoreContract('postgres', async () => onOwnPool(await database(), openPostgresSetupStore));

  describe('PostgreSQL specifics', () => {
    it('of concurrent creations of one slug by two processes exactly one wins; the unique constraint decides', async () => {
      const url = await database();
      const [a, b] = [await onOwnPool(url, openPostgresSetupStore), await onOwnPool(url, openPostgresSetupStore)];
      try {
        const slug = `race-${randomUUID().slice(0, 8)}`;
        const settled = await Promise.allSettled(
          Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).createWorkspace({ id: randomUUID(), slug, name: 'Race', createdAt: new Date().toISOString() })),
        );
        expect(settled.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
        for (const result of settled) if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(ValidationFailed);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('remembers a key only while listening for key changes, and a revocation by another process takes effect as soon as its commit is delivered', async () => {
      const url = await database();
      const [api, cli] = [await onOwnPool(url, openPostgresSetupStore), await onOwnPool(url, openPostgresSetupStore)];
      try {
        const workspaceId = randomUUID();
        await cli.createWorkspace({ id: workspaceId, slug: `keys-${workspaceId.slice(0, 8)}`, name: 'Keys', createdAt: new Date().toISOString() });
        const key = { id: randomUUID(), workspaceId, name: 'k', fingerprint: 'b'.repeat(64), access: 'read-write' as const, objects: 'all' as const, createdAt: new Date().toISOString(), lastUsedAt: null, revokedAt: null };
        await cli.createKey(key);
        // Not listening yet: nothing is trusted, the server is asked.
        expect(api.keyByFingerprintNow(key.fingerprint)).toBeUndefined();
        await eventually(async () => (await api.keyByFingerprint(key.fingerprint), api.keyByFingerprintNow(key.fingerprint)), (found) => found !== undefined, 5_000, 'the key remembered');
        expect(api.keyByFingerprintNow(key.fingerprint)?.revokedAt).toBeNull();
        await cli.revokeKey(key.id, '2026-01-01T00:00:00.000Z');
        // Either asked again or already forgotten: never the key as it was.
        await eventually(async () => api.keyByFingerprintNow(key.fingerprint), (found) => found === undefined, 1_000, 'the revoked key forgotten');
        expect((await api.keyByFingerprint(key.fingerprint))?.revokedAt).toBe('2026-01-01T00:00:00.000Z');
        expect(api.keyByFingerprintNow(key.fingerprint)?.revokedAt).toBe('2026-01-01T00:00:00.000Z');
        // Trusted for KEY_TRUST_MS at most (behind a proxy that never delivers the announcement).
        await new Promise((resolve) => setTimeout(resolve, KEY_TRUST_MS));
        expect(api.keyByFingerprintNow(key.fingerprint)).toBeUndefined();
        await api.keyByFingerprint(key.fingerprint);
        // Changed through the store itself: forgotten at once.
        await api.renameKey(key.id, 'renamed');
        expect(api.keyByFingerprintNow(key.fingerprint)).toBeUndefined();
      } finally {
        await api.close();
        await cli.close();
      }
    });

    it('refuses keys and users of an unknown workspace, like the embedded store', async () => {
      const store = await onOwnPool(await database(), openPostgresSetupStore);
      try {
        const workspaceId = randomUUID();
        const at = new Date().toISOString();
        const key = { id: randomUUID(), workspaceId, name: 'k', fingerprint: 'a'.repeat(64), access: 'read-only' as const, objects: 'all' as const, createdAt: at, lastUsedAt: null, revokedAt: null };
        await expect(store.createKey(key)).rejects.toThrow(new ValidationFailed(`workspace ${workspaceId} does not exist`));
        await expect(store.addUser({ id: randomUUID(), workspaceId, name: 'Ana', email: 'ana@x.test', createdAt: at })).rejects.toBeInstanceOf(ValidationFailed);
      } finally {
        await store.close();
      }
    });

    it('refuses text holding U+0000 (PostgreSQL text cannot hold it) as bad input, and stores nothing', async () => {
      const store = await onOwnPool(await database(), openPostgresSetupStore);
      try {
        const ws = { id: randomUUID(), slug: `ws-${randomUUID().slice(0, 8)}`, name: 'W', createdAt: '2025-01-01T00:00:00.000Z' };
        await expect(store.createWorkspace({ ...ws, name: 'A\u0000B' })).rejects.toThrow(new ValidationFailed(NUL_TEXT_MESSAGE));
        expect(await store.workspaceById(ws.id)).toBeNull();
        await store.createWorkspace(ws);
        await expect(store.addUser({ id: randomUUID(), workspaceId: ws.id, name: 'Ana\u0000', email: 'ana@x.test', createdAt: ws.createdAt })).rejects.toBeInstanceOf(ValidationFailed);
        expect(await store.listUsers(ws.id)).toEqual([]);
      } finally {
        await store.close();
      }
    });

    it('a key last used later is never moved back by a touch that arrives late from another process', async () => {
      const store = await onOwnPool(await database(), openPostgresSetupStore);
      try {
        const ws = { id: randomUUID(), slug: `ws-${randomUUID().slice(0, 8)}`, name: 'W', createdAt: '2025-01-01T00:00:00.000Z' };
        await store.createWorkspace(ws);
        const key = { id: randomUUID(), workspaceId: ws.id, name: 'k', fingerprint: 'b'.repeat(64), access: 'read-only' as const, objects: ['clients'], createdAt: ws.createdAt, lastUsedAt: null, revokedAt: null };
        await store.createKey(key);
        await store.touchKey(key.id, '2025-01-01T00:00:09.000Z');
        await store.touchKey(key.id, '2025-01-01T00:00:08.000Z');
        expect(await store.keyById(key.id)).toEqual({ ...key, lastUsedAt: '2025-01-01T00:00:09.000Z' });
      } finally {
        await store.close();
      }
    });
  });
});

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationFailed } from '../../src/core/errors.js';
import { openMongoSetupStore } from '../../src/setup/mongodb/index.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { setupStoreContract } from './setupstore.contract.js';

/**
 * The SetupStore contract against a real MongoDB (MONGODB_URL, or a `mongo:7` container when
 * Docker answers; skipped with one line otherwise, see ./backends.ts), in a database of its own.
 */

const backend = await mongoBackend();

describeBackend('MongoDB setup store', backend, (url) => {
  const { client, database } = mongoDatabases(url);

  setupStoreContract('mongodb', () => openMongoSetupStore({ client: client(), dbName: database() }));

  describe('MongoDB specifics', () => {
    it('of concurrent creations of one slug (two csr runs) exactly one wins; the unique index decides', async () => {
      const store = await openMongoSetupStore({ client: client(), dbName: database() });
      try {
        const slug = `race-${randomUUID().slice(0, 8)}`;
        const settled = await Promise.allSettled(
          Array.from({ length: 5 }, () => store.createWorkspace({ id: randomUUID(), slug, name: 'Race', createdAt: new Date().toISOString() })),
        );
        expect(settled.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
        for (const result of settled) {
          if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(ValidationFailed);
        }
      } finally {
        await store.close();
      }
    });

    it('refuses keys and users of an unknown workspace, like the embedded store', async () => {
      const store = await openMongoSetupStore({ client: client(), dbName: database() });
      try {
        const workspaceId = randomUUID();
        const at = new Date().toISOString();
        await expect(
          store.createKey({
            id: randomUUID(),
            workspaceId,
            name: 'k',
            fingerprint: 'a'.repeat(64),
            access: 'read-only',
            objects: 'all',
            createdAt: at,
            lastUsedAt: null,
            revokedAt: null,
          }),
        ).rejects.toBeInstanceOf(ValidationFailed);
        await expect(store.addUser({ id: randomUUID(), workspaceId, name: 'Ana', email: 'ana@x.test', createdAt: at })).rejects.toBeInstanceOf(
          ValidationFailed,
        );
      } finally {
        await store.close();
      }
    });
  });
});

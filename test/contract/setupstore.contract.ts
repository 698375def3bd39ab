import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationFailed } from '../../src/core/errors.js';
import type { ApiKey, SetupStore, User, Workspace } from '../../src/setup/port.js';

/**
 * The SetupStore port's behaviour, run against every adapter (test/contract/setupstore.*.test.ts).
 * Every test uses its own slugs and ids, so the suite can run against a shared server.
 */
export function setupStoreContract(name: string, open: () => Promise<SetupStore> | SetupStore): void {
  describe(`SetupStore contract: ${name}`, () => {
    let store: SetupStore;

    beforeAll(async () => {
      store = await open();
    });

    afterAll(async () => {
      await store?.close();
    });

    const at = (second: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();

    async function workspace(overrides: Partial<Workspace> = {}): Promise<Workspace> {
      const id = randomUUID();
      const created: Workspace = { id, slug: `ws-${id.slice(0, 8)}`, name: 'Acme Inc', createdAt: at(0), ...overrides };
      await store.createWorkspace(created);
      return created;
    }

    function key(workspaceId: string, overrides: Partial<ApiKey> = {}): ApiKey {
      return {
        id: randomUUID(),
        workspaceId,
        name: 'Zapier',
        fingerprint: randomUUID().replaceAll('-', '').repeat(2),
        access: 'read-write',
        objects: 'all',
        createdAt: at(1),
        lastUsedAt: null,
        revokedAt: null,
        ...overrides,
      };
    }

    function user(workspaceId: string, overrides: Partial<User> = {}): User {
      return { id: randomUUID(), workspaceId, name: 'Ana Lima', email: `ana-${randomUUID()}@x.test`, createdAt: at(2), ...overrides };
    }

    describe('workspaces', () => {
      it('creates a workspace and finds it by slug and by id', async () => {
        const created = await workspace();
        expect(await store.workspaceBySlug(created.slug)).toEqual(created);
        expect(await store.workspaceById(created.id)).toEqual(created);
      });

      it('lists every workspace in creation order', async () => {
        const [first, second] = [await workspace(), await workspace()];
        const listed = await store.listWorkspaces();
        expect(listed).toContainEqual(first);
        expect(listed.indexOf(listed.find((each) => each.id === first.id)!)).toBeLessThan(listed.findIndex((each) => each.id === second.id));
      });

      it('answers null for an unknown slug or id', async () => {
        expect(await store.workspaceBySlug(`nope-${randomUUID()}`)).toBeNull();
        expect(await store.workspaceById(randomUUID())).toBeNull();
      });

      it('refuses a taken slug with ValidationFailed naming the slug, and keeps the first workspace', async () => {
        const first = await workspace();
        const error = await store
          .createWorkspace({ id: randomUUID(), slug: first.slug, name: 'Other', createdAt: at(5) })
          .catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(ValidationFailed);
        expect((error as Error).message).toContain(first.slug);
        expect(await store.workspaceBySlug(first.slug)).toEqual(first);
      });
    });

    describe('API keys', () => {
      it('creates keys and finds them by fingerprint and by id, objects as given', async () => {
        const ws = await workspace();
        const all = key(ws.id);
        const some = key(ws.id, { access: 'read-only', objects: ['clients', 'contacts'], name: 'Reporting' });
        await store.createKey(all);
        await store.createKey(some);
        expect(await store.keyByFingerprint(all.fingerprint)).toEqual(all);
        expect(await store.keyByFingerprint(some.fingerprint)).toEqual(some);
        expect(await store.keyById(some.id)).toEqual(some);
        expect(await store.keyByFingerprint('0'.repeat(64))).toBeNull();
        expect(await store.keyById(randomUUID())).toBeNull();
      });

      it('lists the keys of one workspace in creation order', async () => {
        const [ws, other] = [await workspace(), await workspace()];
        const first = key(ws.id, { createdAt: at(1) });
        const second = key(ws.id, { createdAt: at(2), name: 'Second' });
        await store.createKey(second);
        await store.createKey(first);
        await store.createKey(key(other.id));
        expect(await store.listKeys(ws.id)).toEqual([first, second]);
        expect(await store.listKeys(randomUUID())).toEqual([]);
      });

      it('revokes once: revoking again keeps the first time; a revoked key is still found (and shows it)', async () => {
        const ws = await workspace();
        const created = key(ws.id);
        await store.createKey(created);
        expect(await store.revokeKey(created.id, at(10))).toEqual({ ...created, revokedAt: at(10) });
        expect(await store.revokeKey(created.id, at(20))).toEqual({ ...created, revokedAt: at(10) });
        expect((await store.keyByFingerprint(created.fingerprint))?.revokedAt).toBe(at(10));
        expect((await store.listKeys(ws.id))[0]?.revokedAt).toBe(at(10));
      });

      it('renames a key, found under its new name; an unknown key answers null', async () => {
        const ws = await workspace();
        const created = key(ws.id);
        await store.createKey(created);
        expect(await store.renameKey(created.id, 'Zapier (old)')).toEqual({ ...created, name: 'Zapier (old)' });
        expect(await store.keyByFingerprint(created.fingerprint)).toEqual({ ...created, name: 'Zapier (old)' });
        expect(await store.listKeys(ws.id)).toEqual([{ ...created, name: 'Zapier (old)' }]);
        expect(await store.renameKey(randomUUID(), 'x')).toBeNull();
      });

      it('keyByFingerprintNow answers what keyByFingerprint would, or undefined when the store must be asked: never a key as it was before a revocation or rename', async () => {
        const ws = await workspace();
        const created = key(ws.id);
        const nowIs = (expected: ApiKey | null) => {
          const answer = store.keyByFingerprintNow(created.fingerprint);
          if (answer !== undefined) expect(answer).toEqual(expected);
        };
        nowIs(null);
        await store.createKey(created);
        nowIs(created);
        expect(await store.keyByFingerprint(created.fingerprint)).toEqual(created);
        nowIs(created);
        await store.renameKey(created.id, 'Renamed');
        nowIs({ ...created, name: 'Renamed' });
        await store.revokeKey(created.id, at(10));
        nowIs({ ...created, name: 'Renamed', revokedAt: at(10) });
        expect(store.keyByFingerprintNow('0'.repeat(64)) ?? null).toBeNull();
      });

      it('keeps a key\'s own rate limit, changed and removed, and shows it to keyByFingerprint and keyByFingerprintNow', async () => {
        const ws = await workspace();
        const created = { ...key(ws.id), rateLimit: '20/s' };
        await store.createKey(created);
        expect(await store.keyById(created.id)).toEqual(created);
        expect(await store.setKeyRateLimit(created.id, '5/m,burst=10')).toEqual({ ...created, rateLimit: '5/m,burst=10' });
        expect(await store.keyByFingerprint(created.fingerprint)).toEqual({ ...created, rateLimit: '5/m,burst=10' });
        const now = store.keyByFingerprintNow(created.fingerprint);
        if (now !== undefined) expect(now).toEqual({ ...created, rateLimit: '5/m,burst=10' });
        const { rateLimit: _none, ...without } = created;
        expect(await store.setKeyRateLimit(created.id, null)).toEqual(without);
        expect(await store.listKeys(ws.id)).toEqual([without]);
        expect(await store.setKeyRateLimit(randomUUID(), '1/s')).toBeNull();
      });

      it('revoking an unknown key answers null', async () => {
        expect(await store.revokeKey(randomUUID(), at(10))).toBeNull();
      });

      it('touchKey records when the key was last used', async () => {
        const ws = await workspace();
        const created = key(ws.id);
        await store.createKey(created);
        await store.touchKey(created.id, at(30));
        expect((await store.keyById(created.id))?.lastUsedAt).toBe(at(30));
        await store.touchKey(created.id, at(40));
        expect((await store.keyByFingerprint(created.fingerprint))?.lastUsedAt).toBe(at(40));
        await expect(store.touchKey(randomUUID(), at(40))).resolves.toBeUndefined();
      });

      it('refuses a second key with the same fingerprint', async () => {
        const ws = await workspace();
        const created = key(ws.id);
        await store.createKey(created);
        await expect(store.createKey(key(ws.id, { fingerprint: created.fingerprint }))).rejects.toBeInstanceOf(ValidationFailed);
        expect(await store.listKeys(ws.id)).toEqual([created]);
      });
    });

    describe('users', () => {
      it('adds users and lists those of one workspace in creation order', async () => {
        const [ws, other] = [await workspace(), await workspace()];
        const ana = user(ws.id, { createdAt: at(1) });
        const bo = user(ws.id, { name: 'Bo Chen', createdAt: at(2) });
        await store.addUser(bo);
        await store.addUser(ana);
        await store.addUser(user(other.id));
        expect(await store.listUsers(ws.id)).toEqual([ana, bo]);
        expect(await store.listUsers(randomUUID())).toEqual([]);
      });

      it('refuses an email already used in the workspace, case-insensitively, naming it', async () => {
        const ws = await workspace();
        const ana = user(ws.id, { email: `Ana.Lima-${randomUUID()}@X.test` });
        await store.addUser(ana);
        const error = await store.addUser(user(ws.id, { email: ana.email.toLowerCase() })).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(ValidationFailed);
        expect((error as Error).message).toContain(ana.email.toLowerCase());
        await expect(store.addUser(user(ws.id, { email: ana.email.toUpperCase() }))).rejects.toBeInstanceOf(ValidationFailed);
        expect(await store.listUsers(ws.id)).toEqual([ana]);
      });

      it('allows the same email in another workspace', async () => {
        const [ws, other] = [await workspace(), await workspace()];
        const email = `same-${randomUUID()}@x.test`;
        await store.addUser(user(ws.id, { email }));
        await store.addUser(user(other.id, { email }));
        expect((await store.listUsers(other.id)).map((found) => found.email)).toEqual([email]);
      });
    });
  });
}

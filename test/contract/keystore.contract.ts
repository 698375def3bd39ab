import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyStore } from '../../src/privacy/port.js';
import { openValue, sealValue, Vault, WrongMasterKey } from '../../src/privacy/vault.js';

/**
 * The KeyStore port and the vault over it, run against every adapter (test/contract/keystore.*.test.ts):
 * a key is created, wrapped, found and deleted; a deleted key makes a read answer null, never an
 * error. `open` gives another store on the same data each call, as two processes have.
 */
export function keyStoreContract(name: string, open: () => Promise<KeyStore> | KeyStore): void {
  describe(`KeyStore contract: ${name}`, () => {
    let store: KeyStore;
    let other: KeyStore;
    const master = randomBytes(32);
    beforeAll(async () => {
      store = await open();
      other = await open();
    });
    afterAll(async () => {
      await store?.close();
      await other?.close();
    });

    it('keeps the first wrapped key of an id; a second create answers the one kept', async () => {
      const id = randomUUID();
      const first = randomBytes(60);
      expect(await store.create(id, first)).toEqual(first);
      expect(await other.create(id, randomBytes(60))).toEqual(first);
      expect((await other.getMany([id, randomUUID()])).get(id)).toEqual(first);
      expect((await other.getMany([id, randomUUID()])).size).toBe(1);
    });

    it('creates of one id racing from two stores all answer the one key kept', async () => {
      // Two events of one request, or two processes, may make a record's first key at once.
      for (let round = 0; round < 20; round++) {
        const id = randomUUID();
        const offered = Array.from({ length: 6 }, () => randomBytes(60));
        const kept = await Promise.all(offered.map((wrapped, i) => (i % 2 === 0 ? store : other).create(id, wrapped)));
        const stored = (await store.getMany([id])).get(id);
        expect(offered.some((wrapped) => wrapped.equals(stored!))).toBe(true);
        for (const answer of kept) expect(answer).toEqual(stored);
      }
    });

    it('deletes keys for good and counts those that existed', async () => {
      const ids = [randomUUID(), randomUUID()];
      for (const id of ids) await store.create(id, randomBytes(60));
      expect(await other.delete([...ids, randomUUID()])).toBe(2);
      expect((await store.getMany(ids)).size).toBe(0);
      expect(await store.delete(ids)).toBe(0);
    });

    it('a vault wraps data keys with the master key: stored wrapped, never as the key itself', async () => {
      const vault = await Vault.open(master, store, 'test');
      const id = randomUUID();
      const key = await vault.keyFor(id);
      const wrapped = (await store.getMany([id])).get(id)!;
      expect(wrapped.includes(key)).toBe(false);
      expect(await (await Vault.open(master, other, 'test')).keyFor(id)).toEqual(key);
    });

    it('a value sealed under a deleted key opens as null (undefined for the caller), never an error', async () => {
      const vault = await Vault.open(master, store, 'test');
      const id = randomUUID();
      const sealed = sealValue(await vault.keyFor(id), id, 'email', 'ann@example.com');
      expect(openValue((await vault.existingKeys([id])).get(id), id, 'email', sealed)).toBe('ann@example.com');
      expect(await vault.deleteKeys([id])).toBe(1);
      const after = (await vault.existingKeys([id])).get(id);
      expect(after).toBeUndefined();
      expect(openValue(after, id, 'email', sealed)).toBeUndefined();
      // A key made after the erasure is a new key: the old values stay closed.
      expect(openValue(await vault.keyFor(id), id, 'email', sealed)).toBeUndefined();
    });

    it('refuses another master key than the one the store was first used with', async () => {
      await Vault.open(master, store, 'test');
      await expect(Vault.open(randomBytes(32), other, 'MASTER_KEY_FILE=/x')).rejects.toThrow(WrongMasterKey);
      await expect(Vault.open(randomBytes(32), other, 'MASTER_KEY_FILE=/x')).rejects.toThrow(/MASTER_KEY_FILE=\/x is not the one/);
    });
  });
}

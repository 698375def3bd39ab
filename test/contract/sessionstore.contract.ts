import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session, SessionStore, SignInLink } from '../../src/setup/sessionPort.js';

/**
 * The SessionStore port's behaviour (Setup page sign-ins), run against every adapter
 * (test/contract/sessionstore.*.test.ts). Every test uses its own hashes.
 */
export function sessionStoreContract(name: string, open: () => Promise<SessionStore> | SessionStore): void {
  describe(`SessionStore contract: ${name}`, () => {
    let store: SessionStore;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
    });

    const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString();
    const hash = () => randomUUID().replaceAll('-', '').repeat(2);
    const link = (overrides: Partial<SignInLink> = {}): SignInLink => ({
      tokenHash: hash(),
      workspaceId: randomUUID(),
      actor: { id: randomUUID(), name: 'Ana' },
      createdAt: at(0),
      expiresAt: at(15),
      usedAt: null,
      ...overrides,
    });
    const session = (overrides: Partial<Session> = {}): Session => ({
      idHash: hash(),
      workspaceId: randomUUID(),
      actor: { id: randomUUID(), name: 'Ana' },
      createdAt: at(0),
      lastSeenAt: at(0),
      ...overrides,
    });

    it('uses a link once, answering what it was made for', async () => {
      const made = link();
      await store.createLink(made);
      expect(await store.useLink(made.tokenHash, at(1))).toEqual({ ok: true, link: { ...made, usedAt: at(1) } });
      expect(await store.useLink(made.tokenHash, at(2))).toEqual({ ok: false, reason: 'used' });
    });

    it('of concurrent uses of one link exactly one succeeds', async () => {
      const made = link();
      await store.createLink(made);
      const uses = await Promise.all(Array.from({ length: 5 }, () => store.useLink(made.tokenHash, at(1))));
      expect(uses.filter((use) => use.ok)).toHaveLength(1);
    });

    it('refuses an expired link (and an unknown one), which stays unused', async () => {
      const made = link({ expiresAt: at(15) });
      await store.createLink(made);
      expect(await store.useLink(made.tokenHash, at(15))).toEqual({ ok: false, reason: 'expired' });
      expect(await store.useLink(made.tokenHash, at(16))).toEqual({ ok: false, reason: 'expired' });
      expect(await store.useLink(hash(), at(1))).toEqual({ ok: false, reason: 'unknown' });
    });

    it('keeps a session while it is seen within the idle time, and ends it when it was not', async () => {
      const opened = session();
      await store.createSession(opened);
      expect(await store.touchSession(opened.idHash, at(10), at(-1))).toEqual({ ...opened, lastSeenAt: at(10) });
      // Last seen at minute 10: idle since minute 10 or later means too long.
      expect(await store.touchSession(opened.idHash, at(30), at(10))).toBeNull();
      expect(await store.touchSession(opened.idHash, at(31), at(0))).toBeNull();
    });

    it('ends a session on request; an unknown one is none', async () => {
      const opened = session();
      await store.createSession(opened);
      await store.endSession(opened.idHash);
      expect(await store.touchSession(opened.idHash, at(1), at(-1))).toBeNull();
      expect(await store.touchSession(hash(), at(1), at(-1))).toBeNull();
      await store.endSession(hash());
    });
  });
}

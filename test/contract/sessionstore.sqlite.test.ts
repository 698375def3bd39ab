import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteSessionStore } from '../../src/setup/sqlite/sessions.js';
import { sessionStoreContract } from './sessionstore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'csr-sessionstore-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

sessionStoreContract('sqlite', () => openSqliteSessionStore({ path: join(dir, 'contract.db') }));

describe('sqlite session store', () => {
  it('a link made by csr in one process is used once by the server in another (two connections)', async () => {
    const path = join(dir, 'shared.db');
    const cli = openSqliteSessionStore({ path });
    const server = openSqliteSessionStore({ path });
    try {
      const link = { tokenHash: 'a'.repeat(64), workspaceId: 'w1', actor: { id: 'u1', name: 'Ana' }, createdAt: '2025-01-01T00:00:00.000Z', expiresAt: '2025-01-01T00:15:00.000Z', usedAt: null };
      await cli.createLink(link);
      expect((await server.useLink(link.tokenHash, '2025-01-01T00:01:00.000Z')).ok).toBe(true);
      expect(await cli.useLink(link.tokenHash, '2025-01-01T00:02:00.000Z')).toEqual({ ok: false, reason: 'used' });
    } finally {
      await cli.close();
      await server.close();
    }
  });
});

import { describe, expect, it } from 'vitest';
import { linkFrom, openMongoSessionStore, sessionFrom } from '../../src/setup/mongodb/sessions.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { sessionStoreContract } from './sessionstore.contract.js';

/**
 * The SessionStore contract against a real MongoDB (MONGODB_URL, or a `mongo:7` container when
 * Docker answers; skipped with one line otherwise, see ./backends.ts), in a database of its own.
 */

describe('MongoDB session store mapping', () => {
  it('maps documents to links and sessions (hash as _id; a missing usedAt is unused)', () => {
    const actor = { id: 'u1', name: 'Ana', extra: 'dropped' };
    expect(linkFrom({ _id: 'h', workspaceId: 'w', actor, createdAt: 'c', expiresAt: 'e' } as never)).toEqual({
      tokenHash: 'h',
      workspaceId: 'w',
      actor: { id: 'u1', name: 'Ana' },
      createdAt: 'c',
      expiresAt: 'e',
      usedAt: null,
    });
    expect(sessionFrom({ _id: 's', workspaceId: 'w', actor, createdAt: 'c', lastSeenAt: 'l' })).toEqual({
      idHash: 's',
      workspaceId: 'w',
      actor: { id: 'u1', name: 'Ana' },
      createdAt: 'c',
      lastSeenAt: 'l',
    });
  });
});

const backend = await mongoBackend();

describeBackend('MongoDB session store', backend, (url) => {
  const { client, database } = mongoDatabases(url);
  sessionStoreContract('mongodb', () => openMongoSessionStore({ client: client(), dbName: database() }));
});

import type { Collection } from 'mongodb';
import { mongoDatabase, type MongoStoreOptions } from '../../readstore/mongodb/index.js';
import type { Session, SessionStore, SignInLink } from '../sessionPort.js';

/**
 * Setup page sign-ins on MongoDB: `signInLinks` and `setupSessions`, keyed by their hashes.
 * A link's use is one conditional update, so of two concurrent uses exactly one matches.
 */

interface LinkDoc extends Omit<SignInLink, 'tokenHash'> {
  _id: string;
}

interface SessionDoc extends Omit<Session, 'idHash'> {
  _id: string;
}

export const linkFrom = ({ _id, ...rest }: LinkDoc): SignInLink => ({
  tokenHash: _id,
  workspaceId: rest.workspaceId,
  actor: { id: rest.actor.id, name: rest.actor.name },
  createdAt: rest.createdAt,
  expiresAt: rest.expiresAt,
  usedAt: rest.usedAt ?? null,
});

export const sessionFrom = ({ _id, ...rest }: SessionDoc): Session => ({
  idHash: _id,
  workspaceId: rest.workspaceId,
  actor: { id: rest.actor.id, name: rest.actor.name },
  createdAt: rest.createdAt,
  lastSeenAt: rest.lastSeenAt,
});

export async function openMongoSessionStore(options: MongoStoreOptions): Promise<SessionStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const links: Collection<LinkDoc> = db.collection<LinkDoc>('signInLinks');
  const sessions: Collection<SessionDoc> = db.collection<SessionDoc>('setupSessions');
  let closed = false;
  return {
    async createLink({ tokenHash, ...rest }) {
      await links.insertOne({ _id: tokenHash, ...rest });
    },
    async useLink(tokenHash, at) {
      const used = await links.findOneAndUpdate(
        { _id: tokenHash, usedAt: null, expiresAt: { $gt: at } },
        { $set: { usedAt: at } },
        { returnDocument: 'after' },
      );
      if (used) return { ok: true, link: linkFrom(used) };
      const found = await links.findOne({ _id: tokenHash });
      if (!found) return { ok: false, reason: 'unknown' };
      return { ok: false, reason: found.usedAt !== null ? 'used' : 'expired' };
    },
    async createSession({ idHash, ...rest }) {
      await sessions.insertOne({ _id: idHash, ...rest });
    },
    async touchSession(idHash, at, idleSince) {
      const seen = await sessions.findOneAndUpdate({ _id: idHash, lastSeenAt: { $gt: idleSince } }, { $set: { lastSeenAt: at } }, { returnDocument: 'after' });
      if (seen) return sessionFrom(seen);
      await sessions.deleteOne({ _id: idHash });
      return null;
    },
    async endSession(idHash) {
      await sessions.deleteOne({ _id: idHash });
    },
    async close() {
      if (closed) return;
      closed = true;
      if (owned) await client.close();
    },
  };
}

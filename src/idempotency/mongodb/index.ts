import { MongoServerError, type Collection } from 'mongodb';
import { mongoDatabase, type MongoStoreOptions } from '../../readstore/mongodb/index.js';
import type { Claim, ClaimOptions, IdempotencyStore, IdempotentRequest } from '../port.js';
import { mappingStorageErrors } from '../../readstore/mongodb/storageFull.js';

/**
 * Idempotency keys on MongoDB: one document per (workspace, key), `_id` `<workspaceId>:<key>`.
 * A claim is a conditional update (take an expired key, or one whose holder's lease ran out) or
 * else an insert, which the `_id` index lets only one caller win; no transaction needed. A TTL
 * index removes documents once their retention is over.
 */

export interface IdempotencyDoc {
  _id: string;
  fingerprint: string;
  created: Date;
  leaseUntil: Date;
  expiresAt: Date;
  status: number | null;
  body: string | null;
}

const COLLECTION = 'idempotencyKeys';

export const idOf = (request: IdempotentRequest) => `${request.workspaceId}:${request.key}`;

/** What a claim that finds a live document of another holder answers. */
export function claimOf(doc: Pick<IdempotencyDoc, 'fingerprint' | 'status' | 'body'>, request: IdempotentRequest): Claim {
  if (doc.fingerprint !== request.fingerprint) return { kind: 'mismatch' };
  if (doc.status !== null) return { kind: 'replay', answer: { status: doc.status, body: doc.body ?? '' } };
  return { kind: 'running' };
}

export function pendingDoc(request: IdempotentRequest, options: ClaimOptions): IdempotencyDoc {
  const now = options.now.getTime();
  return {
    _id: idOf(request),
    fingerprint: request.fingerprint,
    created: options.now,
    leaseUntil: new Date(now + options.leaseMs),
    expiresAt: new Date(now + options.retainMs),
    status: null,
    body: null,
  };
}

export async function openMongoIdempotencyStore(options: MongoStoreOptions): Promise<IdempotencyStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const keys: Collection<IdempotencyDoc> = db.collection<IdempotencyDoc>(COLLECTION);
  await keys.createIndexes([{ name: 'expire', key: { expiresAt: 1 }, expireAfterSeconds: 0 }]);

  async function claim(request: IdempotentRequest, claimOptions: ClaimOptions): Promise<Claim> {
    const fresh = pendingDoc(request, claimOptions);
    const { _id, ...fields } = fresh;
    const oldest = new Date(claimOptions.now.getTime() - claimOptions.retainMs);
    // The TTL monitor runs about once a minute: an expired document may still be there.
    for (let attempt = 0; attempt < 3; attempt++) {
      const taken = await keys.findOneAndUpdate(
        { _id, $or: [{ created: { $lt: oldest } }, { fingerprint: request.fingerprint, status: null, leaseUntil: { $lte: claimOptions.now } }] },
        { $set: fields },
      );
      if (taken) return { kind: 'run' };
      try {
        await keys.insertOne(fresh);
        return { kind: 'run' };
      } catch (error) {
        if (!(error instanceof MongoServerError) || error.code !== 11000) throw error;
      }
      const existing = await keys.findOne({ _id });
      if (existing && existing.created >= oldest) return claimOf(existing, request);
      // Released or expired between the two steps: claim again.
    }
    return { kind: 'running' };
  }

  return mappingStorageErrors({
    claim,
    async complete(request, answer) {
      await keys.updateOne({ _id: idOf(request), fingerprint: request.fingerprint, status: null }, { $set: { status: answer.status, body: answer.body } });
    },
    async release(request) {
      await keys.deleteOne({ _id: idOf(request), fingerprint: request.fingerprint, status: null });
    },
    async close() {
      if (owned) await client.close();
    },
  });
}

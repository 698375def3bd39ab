import { MongoServerError, type Collection, type Document } from 'mongodb';
import { mongoDatabase, type MongoStoreOptions } from '../../readstore/mongodb/index.js';
import { mappingStorageErrors } from '../../readstore/mongodb/storageFull.js';
import type { Grant, RateLimitStore, RefusalStats, Take } from '../port.js';

/**
 * The rate-limit store on MongoDB: one bucket document per key in the shared database, so that
 * with EventStoreDB + MongoDB a key has one bucket across every process and machine, as on
 * PostgreSQL (docs/sync-clients.md). A take is one `findOneAndUpdate` with an update pipeline
 * (upserting the key's document): the server refills the bucket by the time passed and grants in
 * that one atomic step on one document, so no transaction and no lock are needed. It computes the
 * same arithmetic as `refill` and `grant` of ../port.ts (test/ratelimit/mongodbPipeline.test.ts
 * checks the pipeline against them under MongoDB's documented expression rules). Processes take
 * in batches (limiter.ts): the database sees one take per batch of tokens.
 */

export interface BucketDoc {
  _id: string;
  tokens: number;
  countedAt: number;
  /** What the last take granted (the caller reads it from the document the update returns). */
  granted: number;
  refusedHour: number;
  refusedNow: number;
  refusedBefore: number;
  refusedLastAt: number | null;
}

const COLLECTION = 'rateBuckets';
const HOUR_MS = 3_600_000;
/** A field of the stored document, where a missing one (the first take's upsert) reads as `otherwise`. */
const field = (name: string, otherwise: unknown) => ({ $ifNull: [`$${name}`, otherwise] });

/**
 * The update pipeline of one take. Every expression of a `$set` stage reads the document as it
 * was before that stage, so the first stage computes the refilled tokens and the refusal counts
 * from the stored values, the next ones the grant from those.
 */
export function takePipeline(take: Take): Document[] {
  const { limit, now } = take;
  const hour = Math.floor(now / HOUR_MS);
  const storedHour = field('refusedHour', null);
  return [
    {
      $set: {
        // refill(): min(burst, tokens + max(0, now - countedAt) / 1000 * perSecond); a new bucket is full.
        available: {
          $min: [
            limit.burst,
            { $add: [field('tokens', limit.burst), { $multiply: [{ $divide: [{ $max: [0, { $subtract: [now, field('countedAt', now)] }] }, 1000] }, limit.perSecond] }] },
          ],
        },
        // A take never moves a bucket's time back (machines' clocks differ a little).
        countedAt: { $max: [field('countedAt', now), now] },
        refusedHour: hour,
        refusedNow: { $add: [{ $cond: [{ $eq: [storedHour, hour] }, field('refusedNow', 0), 0] }, take.refused] },
        refusedBefore: {
          $cond: [{ $eq: [storedHour, hour] }, field('refusedBefore', 0), { $cond: [{ $eq: [storedHour, hour - 1] }, field('refusedNow', 0), 0] }],
        },
        refusedLastAt: take.refused > 0 ? now : field('refusedLastAt', null),
      },
    },
    // grant(): none below atLeast, else max(atLeast, min(wanted, floor(available))).
    { $set: { granted: { $cond: [{ $lt: ['$available', take.atLeast] }, 0, { $max: [take.atLeast, { $min: [take.wanted, { $floor: '$available' }] }] }] } } },
    { $set: { tokens: { $subtract: ['$available', '$granted'] } } },
    { $unset: 'available' },
  ];
}

/** The take's answer from the document the update returned (retryAfterMs as `grant` computes it). */
export function grantOf(doc: Pick<BucketDoc, 'granted' | 'tokens'>, take: Take): Grant {
  if (doc.granted === 0 && take.atLeast > doc.tokens) {
    return { granted: 0, left: doc.tokens, retryAfterMs: Math.ceil(((take.atLeast - doc.tokens) / take.limit.perSecond) * 1000) };
  }
  return { granted: doc.granted, left: doc.tokens, retryAfterMs: 0 };
}

/** Refusals per clock hour, the current one and the one before, as the other stores count them. */
export function refusalsOf(doc: Pick<BucketDoc, 'refusedHour' | 'refusedNow' | 'refusedBefore' | 'refusedLastAt'>, now: number): RefusalStats {
  const hour = Math.floor(now / HOUR_MS);
  const recent = doc.refusedHour === hour ? doc.refusedNow + doc.refusedBefore : doc.refusedHour === hour - 1 ? doc.refusedNow : 0;
  return { recent, lastAt: doc.refusedLastAt === null ? null : new Date(doc.refusedLastAt).toISOString() };
}

export async function openMongoRateLimitStore(options: MongoStoreOptions): Promise<RateLimitStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const buckets: Collection<BucketDoc> = db.collection<BucketDoc>(COLLECTION);

  async function take(request: Take): Promise<Grant> {
    const pipeline = takePipeline(request);
    // Two first takes of a key may both insert: the loser's duplicate key means the document is
    // there now, and its update then applies to it (the server retries most such upserts itself).
    for (let attempt = 0; ; attempt++) {
      try {
        const doc = await buckets.findOneAndUpdate({ _id: request.keyId }, pipeline, { upsert: true, returnDocument: 'after' });
        if (!doc) throw new Error('the rate-limit bucket was not returned by its upsert');
        return grantOf(doc, request);
      } catch (error) {
        if (attempt > 0 || !(error instanceof MongoServerError) || error.code !== 11000) throw error;
      }
    }
  }

  return mappingStorageErrors({
    take,
    async refusals(keyIds) {
      const stats = new Map<string, RefusalStats>();
      if (keyIds.length === 0) return stats;
      const now = Date.now();
      for (const doc of await buckets.find({ _id: { $in: keyIds } }).toArray()) stats.set(doc._id, refusalsOf(doc, now));
      return stats;
    },
    async close() {
      if (owned) await client.close();
    },
  } satisfies RateLimitStore);
}

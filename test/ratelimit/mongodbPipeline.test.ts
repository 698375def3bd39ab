import { describe, expect, it } from 'vitest';
import { parseRateLimit } from '../../src/core/rateLimit.js';
import { grantOf, refusalsOf, takePipeline, type BucketDoc } from '../../src/ratelimit/mongodb/index.js';
import { grant, refill, type RateLimitStore, type Take } from '../../src/ratelimit/port.js';
import { rateLimitStoreContract } from '../contract/ratelimitstore.contract.js';
import { applyUpdatePipeline, evaluate } from '../support/mongoPipeline.js';

/**
 * The MongoDB rate-limit adapter's take, one findOneAndUpdate with an update pipeline, checked
 * where no MongoDB runs: its pipeline evaluated under the manual's rules (test/support/mongoPipeline.ts)
 * computes what the port's shared arithmetic does, and passes the store contract. Its contract
 * against a real server is test/contract/ratelimitstore.mongodb.test.ts.
 */

describe("MongoDB's expression rules, as this check applies them", () => {
  // given an expression and a document, when evaluated, then the manual's answer
  it.each([
    ['$ifNull: a missing field takes the replacement', { $ifNull: ['$x', 5] }, {}, 5],
    ['$ifNull: null takes the replacement', { $ifNull: ['$x', 5] }, { x: null }, 5],
    ['$ifNull: 0 is kept', { $ifNull: ['$x', 5] }, { x: 0 }, 0],
    ['$add: a missing argument makes null', { $add: ['$x', 1] }, {}, null],
    ['$min: null and missing are ignored', { $min: [null, '$x', 3, 7] }, {}, 3],
    ['$max: all missing is null', { $max: ['$x', '$y'] }, {}, null],
    ['$subtract, $divide, $multiply', { $multiply: [{ $divide: [{ $subtract: [10, 4] }, 4] }, 2] }, {}, 3],
    ['$floor', { $floor: 2.9 }, {}, 2],
    ['$cond: 0 is false', { $cond: [0, 'then', 'else'] }, {}, 'else'],
    ['$cond: null is false', { $cond: ['$x', 'then', 'else'] }, { x: null }, 'else'],
    ['$eq: null is not a number', { $eq: [null, 3] }, {}, false],
    ['$lt: null sorts before numbers', { $lt: [null, 0] }, {}, true],
  ])('%s', (_rule, expression, doc, expected) => {
    expect(evaluate(expression, doc)).toEqual(expected);
  });

  it('every expression of a $set stage reads the document as it was before the stage', () => {
    expect(applyUpdatePipeline({ _id: 'k', a: 1, b: 10 }, 'k', [{ $set: { a: 2, b: { $add: ['$a', 100] } } }])).toEqual({ _id: 'k', a: 2, b: 101 });
  });

  it('an upsert starts from the filter\'s _id; stages other than $set/$addFields/$unset (as written here) are refused', () => {
    expect(applyUpdatePipeline(null, 'k', [{ $set: { n: { $ifNull: ['$n', 7] } } }])).toEqual({ _id: 'k', n: 7 });
    expect(() => applyUpdatePipeline(null, 'k', [{ $inc: { n: 1 } }])).toThrow(/no \$inc stage/);
    expect(() => evaluate({ $eq: ['$missing', null] }, {})).toThrow(/wrap it in \$ifNull/);
  });
});

const HOUR = 3_600_000;
const limits = ['10/s,burst=20', '5/m,burst=10', '1000/s', '1/h'].map(parseRateLimit);

/** A small deterministic generator: the same cases on every run. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

describe('the take pipeline computes what the port\'s arithmetic does', () => {
  it('for 2,000 stored buckets and takes: the grant, the tokens left, the time and the refusal counts', () => {
    const next = random(43);
    const T0 = 1_700_000_000_000;
    for (let n = 0; n < 2_000; n++) {
      const limit = limits[Math.floor(next() * limits.length)]!;
      const now = T0 + Math.floor(next() * 4 * HOUR);
      const stored: BucketDoc | null =
        next() < 0.2
          ? null
          : {
              _id: 'key',
              tokens: next() < 0.3 ? 0 : next() * limit.burst,
              countedAt: now - Math.floor((next() - 0.1) * 30_000),
              granted: 3,
              refusedHour: Math.floor(now / HOUR) - Math.floor(next() * 3),
              refusedNow: Math.floor(next() * 5),
              refusedBefore: Math.floor(next() * 5),
              refusedLastAt: next() < 0.5 ? null : now - 1_000,
            };
      const atLeast = Math.floor(next() * 4);
      const take: Take = { keyId: 'key', limit, wanted: atLeast + Math.floor(next() * 30), atLeast, refused: next() < 0.5 ? 0 : Math.floor(next() * 4), now };

      const doc = applyUpdatePipeline(stored as Record<string, unknown> | null, 'key', takePipeline(take)) as unknown as BucketDoc;
      const available = stored ? refill(stored.tokens, stored.countedAt, limit, now) : limit.burst;
      const expected = grant(available, take);
      const hour = Math.floor(now / HOUR);
      const same = stored?.refusedHour === hour;
      const previous = stored?.refusedHour === hour - 1;
      const context = JSON.stringify({ stored, take });
      expect(grantOf(doc, take), context).toEqual(expected);
      expect(doc, context).toEqual({
        _id: 'key',
        tokens: expected.left,
        granted: expected.granted,
        countedAt: Math.max(stored?.countedAt ?? now, now),
        refusedHour: hour,
        refusedNow: (same ? stored.refusedNow : 0) + take.refused,
        refusedBefore: same ? stored.refusedBefore : previous ? stored!.refusedNow : 0,
        refusedLastAt: take.refused > 0 ? now : (stored?.refusedLastAt ?? null),
      });
    }
  });

  it('never moves a bucket\'s time back: a take from a machine whose clock is behind refills nothing and keeps the later time', () => {
    const limit = parseRateLimit('10/s,burst=20');
    const stored = { _id: 'key', tokens: 0, countedAt: 10_000, granted: 0, refusedHour: 0, refusedNow: 0, refusedBefore: 0, refusedLastAt: null };
    const doc = applyUpdatePipeline(stored, 'key', takePipeline({ keyId: 'key', limit, wanted: 1, atLeast: 1, refused: 0, now: 9_000 }));
    expect(doc).toMatchObject({ tokens: 0, countedAt: 10_000, granted: 0 });
  });
});

/** The adapter's store with the server replaced by the pipeline under the manual's rules: one map is one database. */
function storeOnRules(database: Map<string, Record<string, unknown>>): RateLimitStore {
  return {
    take(take) {
      const doc = applyUpdatePipeline(database.get(take.keyId) ?? null, take.keyId, takePipeline(take));
      database.set(take.keyId, doc);
      return grantOf(doc as unknown as BucketDoc, take);
    },
    async refusals(keyIds) {
      const now = Date.now();
      return new Map(keyIds.flatMap((keyId) => (database.has(keyId) ? [[keyId, refusalsOf(database.get(keyId) as unknown as BucketDoc, now)] as const] : [])));
    },
    async close() {},
  };
}

const database = new Map<string, Record<string, unknown>>();
rateLimitStoreContract("mongodb's take pipeline under the manual's rules", () => storeOnRules(database));

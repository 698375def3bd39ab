import { MongoServerError, type ClientSession, type TransactionOptions } from 'mongodb';
import { explainTransactionError, mongoDatabase, type MongoStoreOptions } from '../readstore/mongodb.js';
import {
  ACTIVE,
  COLLECTIONS,
  deliveryFromDoc,
  dueFilter,
  groupMemberDocs,
  memberToDoc,
  newDeliveryDoc,
  payloadFromDoc,
  payloadToDoc,
  webhookFromDoc,
  webhookToDoc,
  WEBHOOK_INDEXES,
  type BulkMemberDoc,
  type DeliveryDoc,
  type PayloadDoc,
  type WebhookDoc,
} from './mongodbMapping.js';
import type { ClaimedDelivery, Webhook, WebhookPayload, WebhookStore } from './port.js';

/**
 * The webhook store on MongoDB (see ./mongodbMapping.ts for documents and indexes). Claims are
 * conditional updates, so competing dispatchers never hold the same delivery; the changes that
 * must commit together (switch-off + skipping, bulk flush, settle) run in transactions, so like
 * the read store it needs a replica set.
 */

const TRANSACTION_OPTIONS: TransactionOptions = { readConcern: { level: 'snapshot' }, writeConcern: { w: 'majority' }, readPreference: 'primary' };

/** Thrown inside a bulk flush transaction to roll it back: another dispatcher sent a member first. */
class AlreadySent extends Error {}

const isDuplicate = (error: unknown) => error instanceof MongoServerError && error.code === 11000;

export async function openMongoWebhookStore(options: MongoStoreOptions): Promise<WebhookStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const webhooks = db.collection<WebhookDoc>(COLLECTIONS.webhooks);
  const payloads = db.collection<PayloadDoc>(COLLECTIONS.payloads);
  const deliveries = db.collection<DeliveryDoc>(COLLECTIONS.deliveries);
  const members = db.collection<BulkMemberDoc>(COLLECTIONS.bulkMembers);
  const counters = db.collection<{ _id: string; value: number }>(COLLECTIONS.counters);
  await Promise.all([
    webhooks.createIndexes(WEBHOOK_INDEXES.webhooks),
    deliveries.createIndexes(WEBHOOK_INDEXES.deliveries),
    members.createIndexes(WEBHOOK_INDEXES.bulkMembers),
  ]);

  const transaction = async <T>(fn: (session: ClientSession) => Promise<T>): Promise<T> => {
    const session = client.startSession();
    try {
      return await session.withTransaction(() => fn(session), TRANSACTION_OPTIONS);
    } catch (error) {
      throw explainTransactionError(error);
    } finally {
      await session.endSession();
    }
  };

  const webhookById = async (id: string, session?: ClientSession): Promise<Webhook | null> => {
    const doc = await webhooks.findOne({ _id: id }, session ? { session } : {});
    return doc ? webhookFromDoc(doc) : null;
  };

  /** Reserves `count` consecutive delivery ids with one round trip. */
  const reserveIds = async (count: number, session?: ClientSession): Promise<number> => {
    const counter = await counters.findOneAndUpdate(
      { _id: 'deliveries' },
      { $inc: { value: count } },
      { upsert: true, returnDocument: 'after', ...(session ? { session } : {}) },
    );
    return counter!.value - count + 1;
  };

  const enqueue = async (items: { payload: WebhookPayload; webhookIds: string[] }[], at: string, claimedUntil: string | null, session?: ClientSession) => {
    const wanted = items.filter((item) => item.webhookIds.length > 0);
    const pairs = wanted.flatMap(({ payload, webhookIds }) => webhookIds.map((webhookId) => ({ payload, webhookId })));
    if (pairs.length === 0) return [];
    for (const { payload } of wanted) {
      await payloads.updateOne({ _id: payload.id }, { $setOnInsert: payloadToDoc(payload) }, { upsert: true, ...(session ? { session } : {}) });
    }
    // Pairs already stored (a redelivered event) are left as they are and not returned.
    const existing = await deliveries
      .find({ $or: pairs.map(({ payload, webhookId }) => ({ webhookId, eventId: payload.id })) }, { projection: { webhookId: 1, eventId: 1 }, ...(session ? { session } : {}) })
      .toArray();
    const stored = new Set(existing.map((doc) => `${doc.webhookId}/${doc.eventId}`));
    const fresh = pairs.filter(({ payload, webhookId }) => !stored.has(`${webhookId}/${payload.id}`));
    if (fresh.length === 0) return [];
    const first = await reserveIds(fresh.length, session);
    const docs = fresh.map(({ payload, webhookId }, index) => newDeliveryDoc(first + index, webhookId, payload, at, claimedUntil));
    try {
      await deliveries.insertMany(docs, { ordered: false, ...(session ? { session } : {}) });
      return docs.map(deliveryFromDoc);
    } catch (error) {
      // A competing dispatcher stored some pair in between: the unique index kept one.
      if (!isDuplicate(error) || session) throw error;
      const inserted = await deliveries.find({ _id: { $in: docs.map((doc) => doc._id) } }).toArray();
      return inserted.map(deliveryFromDoc);
    }
  };

  let closed = false;
  return {
    async createWebhook(webhook) {
      await webhooks.insertOne(webhookToDoc(webhook));
    },
    webhookById: (id) => webhookById(id),
    async listWebhooks(workspaceId) {
      return (await webhooks.find({ workspaceId }).sort({ createdAt: 1, _id: 1 }).toArray()).map(webhookFromDoc);
    },
    async setEnabled(id, enabled, reason) {
      return transaction(async (session) => {
        const update = enabled ? { enabled, disabledReason: null, consecutiveFailures: 0 } : { enabled, disabledReason: reason };
        const changed = await webhooks.updateOne({ _id: id }, { $set: update }, { session });
        if (changed.matchedCount === 0) return null;
        if (!enabled) {
          await deliveries.updateMany({ webhookId: id, status: { $in: ACTIVE } }, { $set: { status: 'skipped', nextAttemptAt: null, claimedUntil: null } }, { session });
        }
        return webhookById(id, session);
      });
    },
    async setSecret(id, secret) {
      const changed = await webhooks.findOneAndUpdate({ _id: id }, { $set: { secret } }, { returnDocument: 'after' });
      return changed ? webhookFromDoc(changed) : null;
    },
    async enqueue(items, at, options) {
      return enqueue(items, at, options?.claimedUntil ?? null);
    },
    async claimDue(now, leaseUntil, limit, quota) {
      const enabled = (await webhooks.find({ enabled: true }).toArray()).map(webhookFromDoc);
      const claimed: ClaimedDelivery[] = [];
      const start = enabled.length === 0 ? 0 : Math.floor(Math.random() * enabled.length);
      for (let i = 0; i < enabled.length && claimed.length < limit; i++) {
        const webhook = enabled[(start + i) % enabled.length]!;
        const take = Math.min(quota(webhook.id), limit - claimed.length);
        if (take <= 0) continue;
        const due = await deliveries.find(dueFilter(webhook.id, now)).sort({ nextAttemptAt: 1, _id: 1 }).limit(take).toArray();
        for (const candidate of due) {
          // Conditional: only one competing dispatcher wins each delivery.
          const won = await deliveries.findOneAndUpdate({ _id: candidate._id, ...dueFilter(webhook.id, now) }, { $set: { claimedUntil: leaseUntil } }, { returnDocument: 'after' });
          if (!won) continue;
          const payload = await payloads.findOne({ _id: won.eventId });
          if (payload) claimed.push({ delivery: deliveryFromDoc(won), webhook, payload: payloadFromDoc(payload) });
        }
      }
      return claimed;
    },
    async settle(outcomes) {
      return transaction(async (session) => {
        const touched = new Set<string>();
        for (const outcome of outcomes) {
          const applied = await deliveries.updateOne(
            { _id: outcome.deliveryId, status: { $in: ACTIVE } },
            {
              $set: {
                status: outcome.status,
                attempts: outcome.attempts,
                responseCode: outcome.responseCode,
                error: outcome.error,
                lastAttemptAt: outcome.lastAttemptAt,
                nextAttemptAt: outcome.nextAttemptAt,
                claimedUntil: null,
              },
            },
            { session },
          );
          if (applied.modifiedCount === 0) continue;
          if (outcome.succeeded) {
            await webhooks.updateOne({ _id: outcome.webhookId }, { $set: { consecutiveFailures: 0 }, $max: { lastSuccessAt: outcome.lastAttemptAt } }, { session });
          } else {
            await webhooks.updateOne({ _id: outcome.webhookId }, { $inc: { consecutiveFailures: 1 } }, { session });
          }
          touched.add(outcome.webhookId);
        }
        const found = await Promise.all([...touched].map((id) => webhookById(id, session)));
        return found.filter((webhook): webhook is Webhook => webhook !== null);
      });
    },
    async deliveries(webhookId, limit) {
      return (await deliveries.find({ webhookId }).sort({ _id: -1 }).limit(limit).toArray()).map(deliveryFromDoc);
    },
    async deliveryById(id) {
      const doc = await deliveries.findOne({ _id: id });
      return doc ? deliveryFromDoc(doc) : null;
    },
    async addBulkMembers(list) {
      if (list.length === 0) return;
      try {
        await members.insertMany(list.map(memberToDoc), { ordered: false });
      } catch (error) {
        // Members already stored (a redelivered event) stay as they are.
        if (!isDuplicate(error)) throw error;
      }
    },
    async bulkGroups() {
      const pending = await members.find({ bulkId: null }).sort({ actionId: 1, object: 1, kind: 1, position: 1 }).toArray();
      const counts = new Map<string, number>();
      for (const key of new Set(pending.map((doc) => `${doc.actionId}\u0000${doc.object}`))) {
        const [actionId, object] = key.split('\u0000') as [string, string];
        counts.set(key, await members.countDocuments({ actionId, object }));
      }
      return groupMemberDocs(pending, (actionId, object) => counts.get(`${actionId}\u0000${object}`) ?? 0);
    },
    async flushBulk(eventIds, payload, webhookIds, at) {
      try {
        await transaction(async (session) => {
          const marked = await members.updateMany({ _id: { $in: eventIds }, bulkId: null }, { $set: { bulkId: payload.id } }, { session });
          if (marked.modifiedCount !== eventIds.length) throw new AlreadySent();
          await enqueue([{ payload, webhookIds }], at, null, session);
        });
        return true;
      } catch (error) {
        if (error instanceof AlreadySent) return false;
        throw error;
      }
    },
    async purge(before) {
      const old = await deliveries.find({ createdAt: { $lt: before } }, { projection: { eventId: 1 } }).toArray();
      if (old.length > 0) await deliveries.deleteMany({ _id: { $in: old.map((doc) => doc._id) } });
      const eventIds = [...new Set(old.map((doc) => doc.eventId))];
      const stillNeeded = new Set((await deliveries.distinct('eventId', { eventId: { $in: eventIds } })) as string[]);
      await payloads.deleteMany({ _id: { $in: eventIds.filter((id) => !stillNeeded.has(id)) } });
      await members.deleteMany({ bulkId: { $ne: null }, occurredAt: { $lt: before } });
      return old.length;
    },
    async close() {
      if (closed) return;
      closed = true;
      if (owned) await client.close();
    },
  };
}

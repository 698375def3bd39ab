import { redactPayloadData } from '../redact.js';
import type { ClientSession, Collection, MongoClient } from 'mongodb';
import { inMongoTransaction, mongoDatabase } from '../../readstore/mongodb/index.js';
import {
  PENDING_FILTER,
  PENDING_SORT,
  groupMemberDocs,
  markMembersFilter,
  memberToDoc,
  purgeMembersFilter,
  seenForObjectPipeline,
  seenKey,
} from './bulkMembers.js';
import {
  DUE_SORT,
  SKIP_UPDATE,
  activeDeliveriesFilter,
  claimFilter,
  deliveryFromDoc,
  dueFilter,
  firstReservedId,
  newDeliveryDoc,
  OLD_UNIQUE_INDEX,
  redeliveryDoc,
  planEnqueue,
  planSettle,
  settleFilter,
  settleUpdate,
  skipFilter,
  type EnqueuePlan,
} from './deliveries.js';
import {
  COLLECTIONS,
  DELIVERY_COUNTER,
  WEBHOOK_INDEXES,
  duplicateInsertIndexes,
  enabledUpdate,
  payloadFromDoc,
  webhookFromDoc,
  webhookToDoc,
  type BulkMemberDoc,
  type CounterDoc,
  type DeliveryDoc,
  type PayloadDoc,
  type WebhookDoc,
} from './mapping.js';
import type { ClaimedDelivery, Delivery, DeliveryStatus, Webhook, WebhookStore } from '../port.js';
import { claimableBy } from '../policy.js';
import { toDeliveryStats } from './stats.js';
import { mappingStorageErrors } from '../../readstore/mongodb/storageFull.js';

/**
 * The webhook store on MongoDB. Collections `webhooks`, `webhookPayloads`, `deliveries`,
 * `bulkMembers` and `counters`; documents, filters and indexes are in ./mongodbMapping.ts.
 *
 * REQUIRES A REPLICA SET, like the read store: the changes that must commit together run in
 * transactions (session.withTransaction, snapshot reads, majority writes): a switch-off with the
 * skipping of its deliveries, a batch of outcomes with the webhooks' failure counts, a bulk flush
 * with the marking of its members, and each purge batch with the payloads it frees.
 *
 * The rest needs no transaction:
 * - enqueue: the payloads are upserted ($setOnInsert: first stored wins), ids are reserved with one
 *   `$inc` on the counter, and the deliveries inserted unordered; the unique (webhookId, eventId)
 *   index turns a repeated pair into an E11000 that is ignored, and only the inserted deliveries are
 *   returned. Ids of pairs already stored are left unused (ids are unique, not gapless).
 * - claimDue: each delivery is taken with a findOneAndUpdate whose filter repeats "still due and
 *   unclaimed", so of competing dispatchers exactly one gets it.
 *
 * Known gap: a process that dies between an enqueue's payload upsert and its delivery inserts
 * leaves a payload no delivery needs, which purge does not find (it frees the payloads of the
 * deliveries it deletes). The embedded store writes both in one transaction.
 *
 * `withTransaction` may run its callback more than once: the callbacks only read and write through
 * their session and compute their result from what they read.
 */

/** Deliveries deleted per purge transaction (a transaction should stay small and short). */
const PURGE_BATCH = 1_000;

/** Rolls a bulk flush back: another dispatcher sent one of its members first. */
class AlreadySent extends Error {}

export async function openMongoWebhookStore(options: { client: MongoClient; dbName?: string }): Promise<WebhookStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const webhooks: Collection<WebhookDoc> = db.collection<WebhookDoc>(COLLECTIONS.webhooks);
  const payloads: Collection<PayloadDoc> = db.collection<PayloadDoc>(COLLECTIONS.payloads);
  const deliveries: Collection<DeliveryDoc> = db.collection<DeliveryDoc>(COLLECTIONS.deliveries);
  const members: Collection<BulkMemberDoc> = db.collection<BulkMemberDoc>(COLLECTIONS.bulkMembers);
  const counters: Collection<CounterDoc> = db.collection<CounterDoc>(COLLECTIONS.counters);
  // The old index made every delivery unique per (webhook, event), resends too.
  if (await deliveries.indexExists(OLD_UNIQUE_INDEX).catch(() => false)) await deliveries.dropIndex(OLD_UNIQUE_INDEX);
  await Promise.all([
    webhooks.createIndexes(WEBHOOK_INDEXES.webhooks),
    deliveries.createIndexes(WEBHOOK_INDEXES.deliveries),
    members.createIndexes(WEBHOOK_INDEXES.bulkMembers),
  ]);
  let closed = false;

  async function transaction<T>(fn: (session: ClientSession) => Promise<T>): Promise<T> {
    if (closed) throw new Error('the webhook store is closed');
    return inMongoTransaction(client, fn);
  }

  const inSession = (session?: ClientSession) => (session ? { session } : {});

  /** Reserves `count` consecutive delivery ids in one round trip; returns the first. */
  async function reserveIds(count: number): Promise<number> {
    const counter = await counters.findOneAndUpdate(
      { _id: DELIVERY_COUNTER },
      { $inc: { value: count } },
      { upsert: true, returnDocument: 'after', projection: { value: 1 } },
    );
    if (!counter) throw new Error('the delivery id counter was not returned');
    return firstReservedId(Number(counter.value), count);
  }

  /**
   * Writes a planned enqueue with ids from `firstId` on. Outside a transaction, pairs already
   * stored are skipped; inside one (a bulk flush, whose payload id is new) any error aborts it.
   */
  async function writeEnqueue(plan: EnqueuePlan, firstId: number, at: string, claimedUntil: string | null, session?: ClientSession): Promise<Delivery[]> {
    if (plan.pairs.length === 0) return [];
    await payloads.bulkWrite(
      plan.payloads.map(({ _id, ...fields }) => ({ updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } })),
      { ordered: true, ...inSession(session) },
    );
    const docs = plan.pairs.map(({ webhookId, payload }, index) => newDeliveryDoc(firstId + index, webhookId, payload, at, claimedUntil));
    try {
      await deliveries.insertMany(docs, { ordered: false, ...inSession(session) });
      return docs.map(deliveryFromDoc);
    } catch (error) {
      const duplicates = session ? null : duplicateInsertIndexes(error);
      if (duplicates === null) throw error;
      // A redelivered event: the pairs already stored keep their delivery and are not returned.
      return docs.filter((_, index) => !duplicates.has(index)).map(deliveryFromDoc);
    }
  }

  async function webhookById(id: string, session?: ClientSession): Promise<Webhook | null> {
    const doc = await webhooks.findOne({ _id: id }, inSession(session));
    return doc ? webhookFromDoc(doc) : null;
  }

  return mappingStorageErrors({
    async createWebhook(webhook) {
      await webhooks.insertOne(webhookToDoc(webhook));
    },

    webhookById: (id) => webhookById(id),

    async listWebhooks(workspaceId) {
      const found = await webhooks.find({ workspaceId }, { sort: { createdAt: 1, _id: 1 } }).toArray();
      return found.map(webhookFromDoc);
    },

    async setEnabled(id, enabled, reason) {
      return transaction(async (session) => {
        const changed = await webhooks.findOneAndUpdate({ _id: id }, enabledUpdate(enabled, reason), { returnDocument: 'after', session });
        if (!changed) return null;
        // Off skips what is waiting; on skips what was enqueued while off (judged before the switch-off).
        await deliveries.updateMany(skipFilter(id), SKIP_UPDATE, { session });
        return webhookFromDoc(changed);
      });
    },

    async deleteWebhook(id) {
      return transaction(async (session) => {
        const removed = await webhooks.findOneAndDelete({ _id: id }, { session });
        if (!removed) return null;
        await deliveries.deleteMany({ webhookId: id }, { session });
        return webhookFromDoc(removed);
      });
    },

    async setSecret(id, secret) {
      const changed = await webhooks.findOneAndUpdate({ _id: id }, { $set: { secret } }, { returnDocument: 'after' });
      return changed ? webhookFromDoc(changed) : null;
    },

    async updateWebhook(id, { name, url, events, objects }) {
      const changed = await webhooks.findOneAndUpdate({ _id: id }, { $set: { name, url, events, objects } }, { returnDocument: 'after' });
      return changed ? webhookFromDoc(changed) : null;
    },

    async enqueue(items, at, options) {
      const plan = planEnqueue(items);
      if (plan.pairs.length === 0) return [];
      const firstId = await reserveIds(plan.pairs.length);
      return writeEnqueue(plan, firstId, at, options?.claimedUntil ?? null);
    },

    async claimDue(now, leaseUntil, limit, quota, options) {
      const enabled = (await webhooks.find({ enabled: true }).toArray()).map(webhookFromDoc).filter((webhook) => claimableBy(webhook, options?.listener));
      const won: { delivery: DeliveryDoc; webhook: Webhook }[] = [];
      // Start at a different webhook each time, so that a full batch does not always favour the first ones.
      const start = enabled.length === 0 ? 0 : Math.floor(Math.random() * enabled.length);
      for (let i = 0; i < enabled.length && won.length < limit; i++) {
        const webhook = enabled[(start + i) % enabled.length]!;
        // Whole numbers only: a MongoDB limit of 0 would mean "no limit".
        const take = Math.floor(Math.min(quota(webhook.id), limit - won.length));
        if (!(take > 0)) continue;
        const due = await deliveries
          .find(dueFilter(webhook.id, now), { sort: DUE_SORT, limit: take, projection: { _id: 1 } })
          .toArray();
        // Each claim is conditional: a delivery another dispatcher took meanwhile is simply not won.
        const claims = await Promise.all(
          due.map(({ _id }) =>
            deliveries.findOneAndUpdate(claimFilter(_id, webhook.id, now), { $set: { claimedUntil: leaseUntil } }, { returnDocument: 'after' }),
          ),
        );
        for (const delivery of claims) if (delivery) won.push({ delivery, webhook });
      }
      if (won.length === 0) return [];
      const eventIds = [...new Set(won.map(({ delivery }) => delivery.eventId))];
      const found = await payloads.find({ _id: { $in: eventIds } }).toArray();
      const byId = new Map(found.map((doc) => [doc._id, payloadFromDoc(doc)]));
      const claimed: ClaimedDelivery[] = [];
      for (const { delivery, webhook } of won) {
        // A delivery whose payload is gone stays claimed (as in the embedded store) and is not handed out.
        const payload = byId.get(delivery.eventId);
        if (payload) claimed.push({ delivery: deliveryFromDoc(delivery), webhook, payload });
      }
      return claimed;
    },

    async settle(outcomes) {
      if (outcomes.length === 0) return [];
      return transaction(async (session) => {
        const ids = [...new Set(outcomes.map((outcome) => outcome.deliveryId))];
        const active = await deliveries.find(activeDeliveriesFilter(ids), { projection: { _id: 1 }, session }).toArray();
        const plan = planSettle(outcomes, active.map((doc) => doc._id));
        if (plan.applied.length === 0) return [];
        await deliveries.bulkWrite(
          plan.applied.map((outcome) => ({ updateOne: { filter: settleFilter(outcome), update: settleUpdate(outcome) } })),
          { ordered: true, session },
        );
        await webhooks.bulkWrite(
          plan.webhooks.map(({ webhookId, update }) => ({ updateOne: { filter: { _id: webhookId }, update } })),
          { ordered: true, session },
        );
        const touched = plan.webhooks.map(({ webhookId }) => webhookId);
        const found = await webhooks.find({ _id: { $in: touched } }, { session }).toArray();
        const byId = new Map(found.map((doc) => [doc._id, webhookFromDoc(doc)]));
        return touched.map((id) => byId.get(id)).filter((webhook): webhook is Webhook => webhook !== undefined);
      });
    },

    async deliveries(webhookId, limit) {
      const count = Math.floor(limit);
      if (!(count > 0)) return [];
      const found = await deliveries.find({ webhookId }, { sort: { _id: -1 }, limit: count }).toArray();
      return found.map(deliveryFromDoc);
    },

    async deliveryById(id) {
      const doc = await deliveries.findOne({ _id: id });
      return doc ? deliveryFromDoc(doc) : null;
    },

    async deliveriesOfEvents(webhookId, eventIds) {
      if (eventIds.length === 0) return [];
      return (await deliveries.find({ webhookId, eventId: { $in: eventIds } }, { sort: { _id: 1 } }).toArray()).map(deliveryFromDoc);
    },

    async payloadById(id) {
      const doc = await payloads.findOne({ _id: id });
      return doc ? payloadFromDoc(doc) : null;
    },

    async redactPayloads(workspaceId, recordIds, fields) {
      const ids = new Set(recordIds);
      const keys = new Set(fields);
      const escaped = recordIds.map((id) => id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      if (escaped.length === 0) return 0;
      let count = 0;
      for (const doc of await payloads.find({ workspaceId, data: { $regex: escaped.join('|') } }).toArray()) {
        const redacted = redactPayloadData(JSON.parse(doc.data), ids, keys);
        if (redacted === null) continue;
        count += (await payloads.updateOne({ _id: doc._id }, { $set: { data: JSON.stringify(redacted) } })).modifiedCount;
      }
      return count;
    },

    async redeliver(items, at, options) {
      if (items.length === 0) return [];
      const plan = planEnqueue(items.map(({ payload, webhookId }) => ({ payload, webhookIds: [webhookId] })));
      await payloads.bulkWrite(
        plan.payloads.map(({ _id, ...fields }) => ({ updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } })),
        { ordered: true },
      );
      const firstId = await reserveIds(items.length);
      const docs = items.map((item, index) => redeliveryDoc(firstId + index, item, at, options?.claimedUntil ?? null));
      await deliveries.insertMany(docs, { ordered: true });
      return docs.map(deliveryFromDoc);
    },

    async addBulkMembers(list) {
      if (list.length === 0) return;
      try {
        await members.insertMany(list.map(memberToDoc), { ordered: false });
      } catch (error) {
        // Members already stored (a redelivered event) stay as they are, flushed or not.
        if (duplicateInsertIndexes(error) === null) throw error;
      }
    },

    async bulkGroups() {
      // One snapshot: the counts must include every pending member listed, and no member added after.
      return transaction(async (session) => {
        const pending = await members.find(PENDING_FILTER, { sort: PENDING_SORT, session }).toArray();
        if (pending.length === 0) return [];
        const actionIds = [...new Set(pending.map((doc) => doc.actionId))];
        const counts = await members
          .aggregate<{ _id: { actionId: string; object: string }; count: number }>(seenForObjectPipeline(actionIds), { session })
          .toArray();
        const seen = new Map(counts.map(({ _id, count }) => [seenKey(_id.actionId, _id.object), count]));
        return groupMemberDocs(pending, (actionId, object) => seen.get(seenKey(actionId, object)) ?? 0);
      });
    },

    async flushBulk(eventIds, payload, webhookIds, at) {
      const plan = planEnqueue([{ payload, webhookIds }]);
      // Reserved before the transaction, so that the hot counter is not held for its length; ids of
      // a flush that rolls back are left unused.
      const firstId = plan.pairs.length > 0 ? await reserveIds(plan.pairs.length) : 0;
      try {
        await transaction(async (session) => {
          if (eventIds.length > 0) {
            const marked = await members.updateMany(markMembersFilter(eventIds), { $set: { bulkId: payload.id } }, { session });
            if (marked.matchedCount !== eventIds.length) throw new AlreadySent();
          }
          await writeEnqueue(plan, firstId, at, null, session);
        });
        return true;
      } catch (error) {
        if (error instanceof AlreadySent) return false;
        throw error;
      }
    },

    async deliveryStats(now) {
      const pending = { status: { $in: ['waiting', 'retrying'] as DeliveryStatus[] } };
      const [groups, inFlight, oldest] = await Promise.all([
        deliveries.aggregate<{ _id: string; n: number }>([{ $group: { _id: '$status', n: { $sum: 1 } } }]).toArray(),
        deliveries.countDocuments({ ...pending, claimedUntil: { $gt: now } }),
        deliveries.find(pending, { sort: { createdAt: 1 }, limit: 1, projection: { createdAt: 1 } }).toArray(),
      ]);
      return toDeliveryStats(groups, inFlight, oldest[0]?.createdAt ?? null);
    },

    async purge(before) {
      let deleted = 0;
      for (;;) {
        const batch = await transaction(async (session) => {
          const old = await deliveries
            .find({ createdAt: { $lt: before } }, { projection: { _id: 1, eventId: 1 }, limit: PURGE_BATCH, session })
            .toArray();
          if (old.length === 0) return { found: 0, deleted: 0 };
          const removed = await deliveries.deleteMany({ _id: { $in: old.map((doc) => doc._id) } }, { session });
          // The payloads of those events, unless another delivery still needs them.
          const eventIds = [...new Set(old.map((doc) => doc.eventId))];
          const needed = new Set((await deliveries.distinct('eventId', { eventId: { $in: eventIds } }, { session })) as string[]);
          const unneeded = eventIds.filter((id) => !needed.has(id));
          if (unneeded.length > 0) await payloads.deleteMany({ _id: { $in: unneeded } }, { session });
          return { found: old.length, deleted: removed.deletedCount };
        });
        deleted += batch.deleted;
        if (batch.found < PURGE_BATCH) break;
      }
      await members.deleteMany(purgeMembersFilter(before));
      return deleted;
    },

    async close() {
      if (closed) return;
      closed = true;
      if (owned) await client.close();
    },
  });
}

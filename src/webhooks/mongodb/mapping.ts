import type { Filter, IndexDescription, UpdateFilter } from 'mongodb';
import type { AttemptOutcome, BulkGroup, BulkMember, Delivery, DeliveryStatus, Redelivery, Webhook, WebhookPayload } from '../port.js';

/**
 * The pure half of the MongoDB webhook store (src/webhooks/mongodb.ts): documents <-> domain
 * objects, the filters and updates that serve the port, and the index definitions. Unit-tested in
 * test/unit/webhookMongodbMapping.test.ts; nothing here talks to a server.
 *
 * Entity ids are `_id` (webhook id, payload = event id, bulk member = event id). Delivery ids are
 * integers reserved from the `counters` collection (spec 6.3: X-SVC-Delivery is a number).
 * A payload's `data` is kept as its JSON text, as the embedded store keeps it: what a receiver is
 * sent is exactly what JSON made of it (no BSON types, no restrictions on `$` or `.` in keys).
 */

export const COLLECTIONS = {
  webhooks: 'webhooks',
  payloads: 'webhookPayloads',
  deliveries: 'deliveries',
  bulkMembers: 'bulkMembers',
  counters: 'counters',
} as const;

/** The `counters` document that hands out delivery ids. */
export const DELIVERY_COUNTER = 'deliveries';

/** Statuses of deliveries still to be sent (the others are final). */
export const ACTIVE: readonly DeliveryStatus[] = ['waiting', 'retrying'];
const activeFilter = () => ({ $in: [...ACTIVE] });

export interface WebhookDoc extends Omit<Webhook, 'id'> {
  _id: string;
}

export interface PayloadDoc extends Omit<WebhookPayload, 'id' | 'data'> {
  _id: string;
  /** JSON text of the payload's data. */
  data: string;
}

export interface DeliveryDoc extends Omit<Delivery, 'id'> {
  _id: number;
  /**
   * Null (or absent in older documents) for the fan-out's deliveries, the document's own id for
   * a resend or recover: the unique (webhookId, eventId, redeliveryKey) index then holds the
   * fan-out to one delivery per (webhook, event) and lets redeliveries repeat it.
   */
  redeliveryKey?: number | null;
  /** A dispatcher (or csr sending a test event) holds the delivery until then; null: nobody. */
  claimedUntil: string | null;
}

export interface BulkMemberDoc extends Omit<BulkMember, 'eventId'> {
  _id: string;
  /** The bulk event that sent this member; null while pending. */
  bulkId: string | null;
}

export interface CounterDoc {
  _id: string;
  value: number;
}

/**
 * - webhooks: per workspace in creation order.
 * - deliveries: one per (webhook, event); the due ones of a webhook in (nextAttemptAt, _id) order
 *   (partial: only waiting and retrying deliveries are indexed, the final ones are the bulk);
 *   a webhook's newest first; by age (purge) and by event (payloads still needed).
 * - bulkMembers: the pending ones in group and log order; all of an (action, object) for the count.
 */
export const WEBHOOK_INDEXES: Record<'webhooks' | 'deliveries' | 'bulkMembers', IndexDescription[]> = {
  webhooks: [{ name: 'by_workspace', key: { workspaceId: 1, createdAt: 1 } }],
  deliveries: [
    { name: 'unique_fan_out', key: { webhookId: 1, eventId: 1, redeliveryKey: 1 }, unique: true },
    {
      name: 'claim_due',
      key: { webhookId: 1, status: 1, nextAttemptAt: 1, _id: 1 },
      partialFilterExpression: { status: activeFilter() },
    },
    { name: 'newest_per_webhook', key: { webhookId: 1, _id: -1 } },
    { name: 'by_age', key: { createdAt: 1 } },
    { name: 'by_event', key: { eventId: 1 } },
  ],
  bulkMembers: [
    { name: 'pending', key: { actionId: 1, object: 1, kind: 1, position: 1 }, partialFilterExpression: { bulkId: null } },
    { name: 'by_action', key: { actionId: 1, object: 1 } },
  ],
};

// ---- webhooks -------------------------------------------------------------------------------

export function webhookToDoc(webhook: Webhook): WebhookDoc {
  return {
    _id: webhook.id,
    workspaceId: webhook.workspaceId,
    name: webhook.name,
    url: webhook.url,
    events: webhook.events === 'all' ? 'all' : [...webhook.events],
    objects: webhook.objects === 'all' ? 'all' : [...webhook.objects],
    enabled: webhook.enabled,
    disabledReason: webhook.disabledReason,
    secret: webhook.secret,
    createdAt: webhook.createdAt,
    consecutiveFailures: webhook.consecutiveFailures,
    lastSuccessAt: webhook.lastSuccessAt,
    ...(webhook.listener ? { listener: true as const } : {}),
  };
}

export function webhookFromDoc(doc: WebhookDoc): Webhook {
  return {
    id: doc._id,
    workspaceId: doc.workspaceId,
    name: doc.name,
    url: doc.url,
    events: doc.events,
    objects: doc.objects,
    enabled: doc.enabled === true,
    disabledReason: doc.disabledReason ?? null,
    secret: doc.secret,
    createdAt: doc.createdAt,
    consecutiveFailures: doc.consecutiveFailures ?? 0,
    lastSuccessAt: doc.lastSuccessAt ?? null,
    ...(doc.listener === true ? { listener: true as const } : {}),
  };
}

/** Switching on clears the reason and starts counting failures afresh; off keeps the count. */
export function enabledUpdate(enabled: boolean, reason: string | null): UpdateFilter<WebhookDoc> {
  return enabled
    ? { $set: { enabled: true, disabledReason: null, consecutiveFailures: 0 } }
    : { $set: { enabled: false, disabledReason: reason } };
}

// ---- payloads -------------------------------------------------------------------------------

export function payloadToDoc(payload: WebhookPayload): PayloadDoc {
  return {
    _id: payload.id,
    workspaceId: payload.workspaceId,
    event: payload.event,
    object: payload.object,
    source: payload.source,
    occurredAt: payload.occurredAt,
    data: JSON.stringify(payload.data) ?? 'null',
  };
}

export function payloadFromDoc(doc: PayloadDoc): WebhookPayload {
  return {
    id: doc._id,
    workspaceId: doc.workspaceId,
    event: doc.event,
    object: doc.object ?? null,
    source: doc.source,
    occurredAt: doc.occurredAt,
    data: JSON.parse(doc.data) as unknown,
  };
}

// ---- deliveries -----------------------------------------------------------------------------

/** What one enqueue writes: each payload once, each (webhook, event) pair once, first one wins. */
export interface EnqueuePlan {
  payloads: PayloadDoc[];
  pairs: { webhookId: string; payload: WebhookPayload }[];
}

export function planEnqueue(items: { payload: WebhookPayload; webhookIds: string[] }[]): EnqueuePlan {
  const payloads = new Map<string, PayloadDoc>();
  const pairs = new Map<string, { webhookId: string; payload: WebhookPayload }>();
  for (const { payload, webhookIds } of items) {
    // An event with no webhook stores nothing (no payload without a delivery that needs it).
    if (webhookIds.length === 0) continue;
    if (!payloads.has(payload.id)) payloads.set(payload.id, payloadToDoc(payload));
    for (const webhookId of webhookIds) {
      const key = JSON.stringify([webhookId, payload.id]);
      if (!pairs.has(key)) pairs.set(key, { webhookId, payload });
    }
  }
  return { payloads: [...payloads.values()], pairs: [...pairs.values()] };
}

/** The first of `count` consecutive ids, from the counter's value after `$inc: count`. */
export function firstReservedId(counterAfter: number, count: number): number {
  return counterAfter - count + 1;
}

export function newDeliveryDoc(id: number, webhookId: string, payload: WebhookPayload, at: string, claimedUntil: string | null): DeliveryDoc {
  return {
    _id: id,
    webhookId,
    eventId: payload.id,
    event: payload.event,
    status: 'waiting',
    responseCode: null,
    attempts: 0,
    error: null,
    createdAt: at,
    lastAttemptAt: null,
    nextAttemptAt: at,
    lastSentAt: null,
    lastSignature: null,
    claimedUntil,
    cause: null,
    originalId: null,
    redeliveryKey: null,
  };
}

/** A resend or recover: a new document every time (its redeliveryKey is its own id). */
export function redeliveryDoc(id: number, item: Redelivery, at: string, claimedUntil: string | null): DeliveryDoc {
  return { ...newDeliveryDoc(id, item.webhookId, item.payload, at, claimedUntil), cause: item.cause, originalId: item.originalId, redeliveryKey: id };
}

/** The index deliveries had before redeliveries; dropped when the store opens. */
export const OLD_UNIQUE_INDEX = 'unique_webhook_event';

export function deliveryFromDoc(doc: DeliveryDoc): Delivery {
  return {
    id: doc._id,
    webhookId: doc.webhookId,
    eventId: doc.eventId,
    event: doc.event,
    status: doc.status,
    responseCode: doc.responseCode ?? null,
    attempts: doc.attempts ?? 0,
    error: doc.error ?? null,
    createdAt: doc.createdAt,
    lastAttemptAt: doc.lastAttemptAt ?? null,
    nextAttemptAt: doc.nextAttemptAt ?? null,
    lastSentAt: doc.lastSentAt ?? null,
    lastSignature: doc.lastSignature ?? null,
    cause: doc.cause ?? null,
    originalId: doc.originalId ?? null,
  };
}

/** Due deliveries of one webhook at `now` that nobody holds a live claim on. */
export function dueFilter(webhookId: string, now: string): Filter<DeliveryDoc> {
  return {
    webhookId,
    status: activeFilter(),
    nextAttemptAt: { $lte: now },
    $or: [{ claimedUntil: null }, { claimedUntil: { $lte: now } }],
  };
}

/** Order of the due deliveries of a webhook: the longest due first (served by `claim_due`). */
export const DUE_SORT = { nextAttemptAt: 1, _id: 1 } as const;

/** One delivery, only if it is still due and unclaimed: of competing claims exactly one matches. */
export function claimFilter(deliveryId: number, webhookId: string, now: string): Filter<DeliveryDoc> {
  return { _id: deliveryId, ...dueFilter(webhookId, now) };
}

/** Switching a webhook off: its waiting and retrying deliveries will never be sent. */
export function skipFilter(webhookId: string): Filter<DeliveryDoc> {
  return { webhookId, status: activeFilter() };
}
export const SKIP_UPDATE: UpdateFilter<DeliveryDoc> = { $set: { status: 'skipped', nextAttemptAt: null, claimedUntil: null } };

/** Which of these deliveries are still waiting or retrying (outcomes apply to those only). */
export function activeDeliveriesFilter(ids: number[]): Filter<DeliveryDoc> {
  return { _id: { $in: [...ids] }, status: activeFilter() };
}

/** An outcome applies only to a delivery still waiting or retrying (not skipped meanwhile). */
export function settleFilter(outcome: AttemptOutcome): Filter<DeliveryDoc> {
  return { _id: outcome.deliveryId, status: activeFilter() };
}

export function settleUpdate(outcome: AttemptOutcome): UpdateFilter<DeliveryDoc> {
  return {
    $set: {
      status: outcome.status,
      attempts: outcome.attempts,
      responseCode: outcome.responseCode,
      error: outcome.error,
      lastAttemptAt: outcome.lastAttemptAt,
      nextAttemptAt: outcome.nextAttemptAt,
      lastSentAt: outcome.sentAt,
      lastSignature: outcome.signature,
      claimedUntil: null,
    },
  };
}

/** What a batch of outcomes does, given which of their deliveries are active now. */
export interface SettlePlan {
  /** Outcomes that apply, in the order given. */
  applied: AttemptOutcome[];
  /** One update per webhook touched, in the order first touched. */
  webhooks: { webhookId: string; update: UpdateFilter<WebhookDoc> }[];
}

/**
 * Replays the outcomes in order as the embedded store applies them one by one: an outcome applies
 * when its delivery is active (and stays active after it when its status is waiting/retrying); a
 * success sets the webhook's failures to 0 and moves lastSuccessAt forward, a failure adds one.
 * Per webhook that folds into one update: after a success, $set the failures that followed it;
 * without one, $inc by the failures.
 */
export function planSettle(outcomes: AttemptOutcome[], activeIds: Iterable<number>): SettlePlan {
  const active = new Set(activeIds);
  const applied: AttemptOutcome[] = [];
  const effects = new Map<string, { reset: boolean; failures: number; lastSuccessAt: string | null }>();
  for (const outcome of outcomes) {
    if (!active.has(outcome.deliveryId)) continue;
    applied.push(outcome);
    if (!ACTIVE.includes(outcome.status)) active.delete(outcome.deliveryId);
    let effect = effects.get(outcome.webhookId);
    if (!effect) effects.set(outcome.webhookId, (effect = { reset: false, failures: 0, lastSuccessAt: null }));
    if (outcome.succeeded) {
      effect.reset = true;
      effect.failures = 0;
      if (effect.lastSuccessAt === null || outcome.lastAttemptAt > effect.lastSuccessAt) effect.lastSuccessAt = outcome.lastAttemptAt;
    } else {
      effect.failures += 1;
    }
  }
  const webhooks = [...effects].map(([webhookId, effect]) => {
    const update: UpdateFilter<WebhookDoc> = effect.reset
      ? { $set: { consecutiveFailures: effect.failures } }
      : { $inc: { consecutiveFailures: effect.failures } };
    // $max: null < any text and ISO times order as text, so lastSuccessAt only moves forward.
    if (effect.lastSuccessAt !== null) update.$max = { lastSuccessAt: effect.lastSuccessAt };
    return { webhookId, update };
  });
  return { applied, webhooks };
}

// ---- bulk members ---------------------------------------------------------------------------

export function memberToDoc(member: BulkMember): BulkMemberDoc {
  return {
    _id: member.eventId,
    workspaceId: member.workspaceId,
    actionId: member.actionId,
    object: member.object,
    kind: member.kind,
    recordId: member.recordId,
    source: member.source,
    occurredAt: member.occurredAt,
    position: member.position,
    actionCount: member.actionCount,
    bulkId: null,
  };
}

export const PENDING_FILTER: Filter<BulkMemberDoc> = { bulkId: null };
/** Group and log order (served by the `pending` index). */
export const PENDING_SORT = { actionId: 1, object: 1, kind: 1, position: 1 } as const;

/** Counts the stored members (flushed or not) of each (action, object) of the given actions. */
export function seenForObjectPipeline(actionIds: string[]): object[] {
  return [{ $match: { actionId: { $in: actionIds } } }, { $group: { _id: { actionId: '$actionId', object: '$object' }, count: { $sum: 1 } } }];
}

export function seenKey(actionId: string, object: string): string {
  return JSON.stringify([actionId, object]);
}

/** Pending member documents in PENDING_SORT order -> one group per (action, object, kind). */
export function groupMemberDocs(docs: BulkMemberDoc[], seenForObject: (actionId: string, object: string) => number): BulkGroup[] {
  const groups: BulkGroup[] = [];
  let current: BulkGroup | undefined;
  for (const doc of docs) {
    if (!current || current.actionId !== doc.actionId || current.object !== doc.object || current.kind !== doc.kind) {
      current = {
        workspaceId: doc.workspaceId,
        actionId: doc.actionId,
        object: doc.object,
        kind: doc.kind,
        source: doc.source,
        actionCount: doc.actionCount,
        seenForObject: seenForObject(doc.actionId, doc.object),
        members: [],
      };
      groups.push(current);
    }
    current.members.push({ eventId: doc._id, recordId: doc.recordId, occurredAt: doc.occurredAt });
  }
  return groups;
}

/** Marks members as sent in `bulkId`; only pending ones match, so a member is flushed once. */
export function markMembersFilter(eventIds: string[]): Filter<BulkMemberDoc> {
  return { _id: { $in: [...eventIds] }, bulkId: null };
}

/** Flushed members whose event is older than the cut-off (pending ones are kept). */
export function purgeMembersFilter(before: string): Filter<BulkMemberDoc> {
  return { bulkId: { $ne: null }, occurredAt: { $lt: before } };
}

// ---- errors ---------------------------------------------------------------------------------

/**
 * The positions of the documents an unordered insertMany did not insert because they were
 * already stored (E11000), or null when the error is anything else (another write error, a
 * write concern error, no write errors at all): that must not be ignored.
 */
export function duplicateInsertIndexes(error: unknown): Set<number> | null {
  if (typeof error !== 'object' || error === null) return null;
  const { writeErrors, result } = error as { writeErrors?: unknown; result?: { getWriteConcernError?: () => unknown } };
  const list: unknown[] = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
  if (list.length === 0) return null;
  if (typeof result?.getWriteConcernError === 'function' && result.getWriteConcernError()) return null;
  const indexes = new Set<number>();
  for (const writeError of list) {
    const { code, index } = writeError as { code?: unknown; index?: unknown };
    if (code !== 11000 || typeof index !== 'number') return null;
    indexes.add(index);
  }
  return indexes;
}

import type { IndexDescription, UpdateFilter } from 'mongodb';
import type { BulkMember, Delivery, DeliveryStatus, Webhook, WebhookPayload } from '../port.js';

/**
 * The pure half of the MongoDB webhook store (./index.ts): collections, documents and their
 * indexes, webhooks and payloads <-> documents, and write errors; deliveries are in
 * ./deliveries.ts, bulk members in ./bulkMembers.ts. Unit-tested in
 * test/webhooks/mongodbMapping.test.ts; nothing here talks to a server.
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
export const activeFilter = () => ({ $in: [...ACTIVE] });

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

import type { Filter, IndexDescription } from 'mongodb';
import type { BulkGroup, BulkMember, Delivery, DeliveryStatus, Webhook, WebhookPayload } from './port.js';

/**
 * The webhook store's documents on MongoDB and the queries that serve the port, as pure
 * functions (unit-tested where no server runs). Entity ids are `_id`; delivery ids are integers
 * reserved from a counter (spec 6.3: X-SVC-Delivery is a number).
 */

export const COLLECTIONS = {
  webhooks: 'webhooks',
  payloads: 'webhookPayloads',
  deliveries: 'deliveries',
  bulkMembers: 'bulkMembers',
  counters: 'counters',
} as const;

export const ACTIVE: DeliveryStatus[] = ['waiting', 'retrying'];

export interface WebhookDoc extends Omit<Webhook, 'id'> {
  _id: string;
}

export interface PayloadDoc extends Omit<WebhookPayload, 'id'> {
  _id: string;
}

export interface DeliveryDoc extends Omit<Delivery, 'id'> {
  _id: number;
  claimedUntil: string | null;
}

export interface BulkMemberDoc extends Omit<BulkMember, 'eventId'> {
  _id: string;
  /** The bulk event that sent this member; null while pending. */
  bulkId: string | null;
}

export const WEBHOOK_INDEXES: Record<'webhooks' | 'deliveries' | 'bulkMembers', IndexDescription[]> = {
  webhooks: [
    { name: 'by_workspace', key: { workspaceId: 1, createdAt: 1 } },
    { name: 'enabled', key: { enabled: 1 } },
  ],
  deliveries: [
    { name: 'unique_webhook_event', key: { webhookId: 1, eventId: 1 }, unique: true },
    { name: 'due', key: { webhookId: 1, nextAttemptAt: 1 }, partialFilterExpression: { status: { $in: ACTIVE } } },
    { name: 'newest_per_webhook', key: { webhookId: 1, _id: -1 } },
    { name: 'by_age', key: { createdAt: 1 } },
    { name: 'by_event', key: { eventId: 1 } },
  ],
  bulkMembers: [
    { name: 'pending', key: { actionId: 1, object: 1, kind: 1, position: 1 }, partialFilterExpression: { bulkId: null } },
    { name: 'by_action', key: { actionId: 1, object: 1 } },
  ],
};

export const webhookToDoc = ({ id, ...rest }: Webhook): WebhookDoc => ({ _id: id, ...rest });
export const webhookFromDoc = ({ _id, ...rest }: WebhookDoc): Webhook => ({
  id: _id,
  workspaceId: rest.workspaceId,
  name: rest.name,
  url: rest.url,
  events: rest.events,
  objects: rest.objects,
  enabled: rest.enabled,
  disabledReason: rest.disabledReason,
  secret: rest.secret,
  createdAt: rest.createdAt,
  consecutiveFailures: rest.consecutiveFailures,
  lastSuccessAt: rest.lastSuccessAt,
});

export const payloadToDoc = ({ id, ...rest }: WebhookPayload): PayloadDoc => ({ _id: id, ...rest });
export const payloadFromDoc = ({ _id, ...rest }: PayloadDoc): WebhookPayload => ({
  id: _id,
  workspaceId: rest.workspaceId,
  event: rest.event,
  object: rest.object,
  source: rest.source,
  occurredAt: rest.occurredAt,
  data: rest.data,
});

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
    claimedUntil,
  };
}

export const deliveryFromDoc = (doc: DeliveryDoc): Delivery => ({
  id: doc._id,
  webhookId: doc.webhookId,
  eventId: doc.eventId,
  event: doc.event,
  status: doc.status,
  responseCode: doc.responseCode,
  attempts: doc.attempts,
  error: doc.error,
  createdAt: doc.createdAt,
  lastAttemptAt: doc.lastAttemptAt,
  nextAttemptAt: doc.nextAttemptAt,
});

/** Due deliveries of one webhook at `now` that nobody holds a live claim on. */
export function dueFilter(webhookId: string, now: string): Filter<DeliveryDoc> {
  return {
    webhookId,
    status: { $in: ACTIVE },
    nextAttemptAt: { $lte: now },
    $or: [{ claimedUntil: null }, { claimedUntil: { $lte: now } }],
  };
}

export const memberToDoc = ({ eventId, ...rest }: BulkMember): BulkMemberDoc => ({ _id: eventId, ...rest, bulkId: null });

/** Pending member documents in (action, object, kind, position) order -> groups, with the per-(action, object) counts. */
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

import { RECORD_STREAM_PREFIX, upcast } from '../events/records.js';
import type { RecordedEvent } from '../eventstore/port.js';
import { createHash } from 'node:crypto';
import type { AttemptOutcome, BulkGroup, EventKind, Webhook, WebhookPayload } from './port.js';

/**
 * The rules of spec 3.2 and 6.2 as pure functions: which record events are sent and to whom,
 * when many become bulk events, what an attempt's result does to a delivery, and when a
 * webhook is switched off automatically.
 */

/** More than this many records of one object in one action become bulk events (spec 8). */
export const BULK_THRESHOLD = 20;
/** Ids in one bulk event (spec 8). */
export const BULK_MAX_IDS = 500;
/** Automatic switch-off: at least this many failed attempts in a row... */
export const SWITCH_OFF_FAILURES = 20;
/** ...and no successful delivery for this long (spec 3.2). */
export const SWITCH_OFF_QUIET_MS = 24 * 60 * 60 * 1000;
/** Deliveries are kept this long (spec 6.4). */
export const RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** A record event as the dispatcher sees it. */
export interface RecordChange {
  workspaceId: string;
  object: string;
  recordId: string;
  kind: EventKind;
  source: string;
  actionId: string;
  /** Records of this object the event's action changed. */
  actionCount: number;
}

const KINDS: Record<string, EventKind> = { RecordCreated: 'created', RecordUpdated: 'updated', RecordDeleted: 'deleted', RecordRollupsChanged: 'updated' };

/** Health-score recalculations are not sent (spec 6.2 rule 3); a change to Health itself is. */
const RECALCULATION_ONLY_FIELDS: ReadonlySet<string> = new Set(['healthScore']);

/**
 * The change an event describes, or null when it is not sent to webhooks. The change feed keeps
 * the recalculations (`recalculations`): a mirror built from it must end with the score GET shows.
 */
export function recordChange(event: RecordedEvent, recalculations = false): RecordChange | null {
  if (!event.stream.startsWith(RECORD_STREAM_PREFIX)) return null;
  const recordEvent = upcast(event);
  if (!recordEvent) return null;
  if (!recalculations && recordEvent.type === 'RecordUpdated' && Object.keys(recordEvent.data.changes).every((key) => RECALCULATION_ONLY_FIELDS.has(key))) {
    return null;
  }
  const { workspaceId, object, recordId } = recordEvent.data;
  return {
    workspaceId,
    object,
    recordId,
    kind: KINDS[recordEvent.type]!,
    source: event.metadata.source,
    actionId: event.metadata.actionId,
    actionCount: event.metadata.actionCounts?.[object] ?? 1,
  };
}

export function isBulk(change: RecordChange): boolean {
  return change.actionCount > BULK_THRESHOLD;
}

export function eventName(object: string, kind: EventKind, bulk = false): string {
  return `${object}.${kind}${bulk ? '.bulk' : ''}`;
}

export function wants(webhook: Webhook, object: string, kind: EventKind): boolean {
  return (
    webhook.enabled &&
    (webhook.objects === 'all' || webhook.objects.includes(object)) &&
    (webhook.events === 'all' || webhook.events.includes(kind))
  );
}

/** Whose due deliveries a claim takes: a dispatcher's (no listener named) or one listen session's. */
export function claimableBy(webhook: Webhook, listener: string | undefined): boolean {
  return listener === undefined ? webhook.listener !== true : webhook.id === listener && webhook.listener === true;
}

/**
 * A bulk event's payload from one chunk of its group's members (log order). Its id is derived
 * from the action, object, kind and first member, so that `csr webhooks recover` rebuilds the
 * event under the id it was first sent with and receivers can drop the repeat.
 */
export function bulkPayload(
  group: Pick<BulkGroup, 'workspaceId' | 'actionId' | 'object' | 'kind' | 'source'>,
  members: readonly { eventId: string; recordId: string; occurredAt: string }[],
): WebhookPayload {
  return {
    id: bulkEventId(group.actionId, group.object, group.kind, members[0]!.eventId),
    workspaceId: group.workspaceId,
    event: eventName(group.object, group.kind, true),
    object: group.object,
    source: group.source,
    // The change is complete when its last record changed.
    occurredAt: members.map((member) => member.occurredAt).reduce((a, b) => (a >= b ? a : b)),
    data: { count: members.length, ids: members.map((member) => member.recordId) },
  };
}

/** A UUID (version 8, RFC 9562's custom form) from the hash of what identifies a chunk. */
function bulkEventId(actionId: string, object: string, kind: EventKind, firstEventId: string): string {
  const bytes = createHash('sha256').update(`bulk\n${actionId}\n${object}\n${kind}\n${firstEventId}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export interface BulkChunk {
  group: BulkGroup;
  members: BulkGroup['members'];
}

/**
 * Which pending bulk members go out now, as chunks of at most BULK_MAX_IDS: full chunks at once;
 * the rest when every record of the action's object has arrived, or when the group has had no
 * new member for `quietMs` (the action's other events may already have been sent before a crash).
 */
export function bulkChunksDue(groups: BulkGroup[], now: number, quietMs: number, lastAddedAt: (group: BulkGroup) => number): BulkChunk[] {
  const chunks: BulkChunk[] = [];
  for (const group of groups) {
    const complete = group.seenForObject >= group.actionCount;
    const quiet = now - lastAddedAt(group) >= quietMs;
    for (let start = 0; start < group.members.length; start += BULK_MAX_IDS) {
      const members = group.members.slice(start, start + BULK_MAX_IDS);
      if (members.length === BULK_MAX_IDS || complete || quiet) chunks.push({ group, members });
    }
  }
  return chunks;
}

export type SendResult = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/**
 * Spec 3.2: a 2xx is delivered; anything else waits for the next retry delay, and the attempt
 * after the last delay (the 6th with the default schedule) makes the delivery failed.
 */
export function afterAttempt(
  delivery: { id: number; webhookId: string; attempts: number },
  result: SendResult,
  at: Date,
  retryDelaysMs: readonly number[],
  sent: { sentAt: string; signature: string },
): AttemptOutcome {
  const attempts = delivery.attempts + 1;
  const common = {
    deliveryId: delivery.id,
    webhookId: delivery.webhookId,
    attempts,
    responseCode: result.status,
    lastAttemptAt: at.toISOString(),
    sentAt: sent.sentAt,
    signature: sent.signature,
  };
  if (result.ok) return { ...common, succeeded: true, status: 'delivered', error: null, nextAttemptAt: null };
  const delay = retryDelaysMs[attempts - 1];
  if (delay === undefined) return { ...common, succeeded: false, status: 'failed', error: result.error, nextAttemptAt: null };
  return { ...common, succeeded: false, status: 'retrying', error: result.error, nextAttemptAt: new Date(at.getTime() + delay).toISOString() };
}

/** The reason to switch a webhook off automatically, or null while it may stay on (spec 3.2). */
export function autoSwitchOffReason(webhook: Webhook, now: Date): string | null {
  if (!webhook.enabled || webhook.consecutiveFailures < SWITCH_OFF_FAILURES) return null;
  const lastGood = webhook.lastSuccessAt ?? webhook.createdAt;
  if (now.getTime() - Date.parse(lastGood) < SWITCH_OFF_QUIET_MS) return null;
  const since = webhook.lastSuccessAt ? `since ${webhook.lastSuccessAt}` : 'ever';
  return `switched off automatically: ${webhook.consecutiveFailures} failed attempts in a row and no successful delivery ${since}`;
}

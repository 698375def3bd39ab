/**
 * The webhook store: webhook configuration, the payloads of events to send, their deliveries
 * (one per webhook and event) and the records waiting to be grouped into bulk events.
 *
 * Configuration and deliveries share one store so that a switch-off and the skipping of the
 * waiting deliveries commit together. Every adapter passes test/contract/webhookstore.contract.ts.
 */

/** The event store's persistent consumer group the dispatchers share. */
export const WEBHOOKS_GROUP = 'webhooks';
/** The streams the fan-out's group reads: record changes, and the workspaces' webhook events. */
export const WEBHOOKS_FILTER = { streamPrefixes: ['record-', 'workspace-'] };

export type EventKind = 'created' | 'updated' | 'deleted';
export const EVENT_KINDS: readonly EventKind[] = ['created', 'updated', 'deleted'];

export interface Webhook {
  id: string;
  workspaceId: string;
  name: string;
  url: string;
  events: 'all' | EventKind[];
  objects: 'all' | string[];
  enabled: boolean;
  /** Why the webhook is off (an admin, or the automatic switch-off and its cause). */
  disabledReason: string | null;
  /** The signing secret. Needed in clear to sign; never printed or logged after creation. */
  secret: string;
  createdAt: string;
  /** Failed attempts in a row since the last delivered one. */
  consecutiveFailures: number;
  lastSuccessAt: string | null;
  /**
   * A `csr webhooks listen` session's temporary webhook: its deliveries are pulled and sent by
   * that process to a local address; no dispatcher sends them (absent on every other webhook).
   */
  listener?: true;
}

/**
 * waiting: not attempted yet; retrying: failed, next attempt at nextAttemptAt; delivered: a 2xx
 * answer; failed: the 6th attempt failed; skipped: the webhook was switched off first.
 */
export interface DeliveryStats {
  /** Deliveries kept (the last 30 days) by status. */
  byStatus: Record<DeliveryStatus, number>;
  /** Claimed by a dispatcher and not settled yet: attempts under way. */
  inFlight: number;
  /** Waiting for a retry after a failed attempt. */
  retrying: number;
  /** Creation time of the oldest delivery not sent yet (waiting or retrying), or null. */
  oldestPendingAt: string | null;
}

export type DeliveryStatus = 'waiting' | 'retrying' | 'delivered' | 'failed' | 'skipped';

/** What is sent for one event, the same for every webhook receiving it (sentAt aside). */
export interface WebhookPayload {
  /** The event id (uuid): the log event's id, or a new one for bulk and test events. */
  id: string;
  workspaceId: string;
  event: string;
  object: string | null;
  source: string;
  /** The log's commit time, ISO 8601 UTC with milliseconds. */
  occurredAt: string;
  data: unknown;
}

/**
 * Why a delivery exists beyond the fan-out: null for the fan-out's own (one per webhook and
 * event), 'resend' for `csr webhooks resend`, 'recover' for `csr webhooks recover`. Only the
 * fan-out's deliveries are unique per (webhook, event); a resend is a new row every time.
 */
export type DeliveryCause = 'resend' | 'recover';

export interface Delivery {
  /** A number (spec 6.3: X-SVC-Delivery), unique across the store. */
  id: number;
  webhookId: string;
  eventId: string;
  event: string;
  status: DeliveryStatus;
  responseCode: number | null;
  attempts: number;
  error: string | null;
  createdAt: string;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  /** The X-SVC-Timestamp (the body's sentAt) and X-SVC-Signature of the last attempt; null before one. */
  lastSentAt: string | null;
  lastSignature: string | null;
  cause: DeliveryCause | null;
  /** The delivery a resend repeats (null for the fan-out's and recovered ones). */
  originalId: number | null;
}

/** A new delivery of an event outside the fan-out: never deduplicated. */
export interface Redelivery {
  payload: WebhookPayload;
  webhookId: string;
  cause: DeliveryCause;
  originalId: number | null;
}

/** A delivery handed to a sender, with what it needs to sign and send. */
export interface ClaimedDelivery {
  delivery: Delivery;
  webhook: Webhook;
  payload: WebhookPayload;
}

/** The state a delivery moves to after an attempt (decided by policy.ts `afterAttempt`). */
export interface AttemptOutcome {
  deliveryId: number;
  webhookId: string;
  succeeded: boolean;
  status: DeliveryStatus;
  attempts: number;
  responseCode: number | null;
  error: string | null;
  lastAttemptAt: string;
  nextAttemptAt: string | null;
  /** What the attempt was sent with: its X-SVC-Timestamp and X-SVC-Signature. */
  sentAt: string;
  signature: string;
}

/** A record event that belongs to a bulk action, waiting to be grouped into `<object>.<kind>.bulk`. */
export interface BulkMember {
  /** The log event's id: a member is stored once however often the event is redelivered. */
  eventId: string;
  workspaceId: string;
  actionId: string;
  object: string;
  kind: EventKind;
  recordId: string;
  source: string;
  occurredAt: string;
  /** Log position, for a stable order of ids. */
  position: string;
  /** Records of this object the action changed (all kinds): the group is complete at this count. */
  actionCount: number;
}

/** The pending members of one (workspace, action, object, kind). */
export interface BulkGroup {
  workspaceId: string;
  actionId: string;
  object: string;
  kind: EventKind;
  source: string;
  actionCount: number;
  /** Members of (action, object) already stored, any kind, flushed or not. */
  seenForObject: number;
  /** Pending members in log order. */
  members: { eventId: string; recordId: string; occurredAt: string }[];
}

export interface WebhookStore {
  createWebhook(webhook: Webhook): Promise<void>;
  webhookById(id: string): Promise<Webhook | null>;
  /** The workspace's webhooks in creation order (createdAt, then id). */
  listWebhooks(workspaceId: string): Promise<Webhook[]>;
  /**
   * Switches on (clearing the reason) or off. Either way waiting and retrying deliveries become
   * skipped: off skips what was waiting; on skips what a fan-out enqueued while the webhook was off.
   */
  setEnabled(id: string, enabled: boolean, reason: string | null): Promise<Webhook | null>;
  setSecret(id: string, secret: string): Promise<Webhook | null>;
  /** A new name, URL and filters (an edit in Setup); the changed webhook, or null when unknown. */
  updateWebhook(id: string, changes: Pick<Webhook, 'name' | 'url' | 'events' | 'objects'>): Promise<Webhook | null>;
  /** Removes a webhook and its deliveries (none is sent afterwards); the removed webhook, or null when unknown. */
  deleteWebhook(id: string): Promise<Webhook | null>;

  /**
   * Stores each payload (once per id) and a delivery to each of its webhooks, skipping pairs
   * already stored: a redelivered event makes no second delivery. Returns the new deliveries.
   * `claimedUntil`: the caller sends them itself now (a test event), so no dispatcher claims them.
   */
  enqueue(items: { payload: WebhookPayload; webhookIds: string[] }[], at: string, options?: { claimedUntil?: string }): Promise<Delivery[]>;
  /**
   * Marks due deliveries (waiting or retrying, next attempt <= now, no live claim) as claimed until
   * `leaseUntil` and returns them, at most `quota(webhookId)` per webhook and `limit` in all,
   * taking webhooks in turn so that one with many due deliveries does not hold back the others.
   * Listener webhooks are left out, unless `listener` names one: then only its deliveries are claimed.
   */
  claimDue(now: string, leaseUntil: string, limit: number, quota: (webhookId: string) => number, options?: { listener?: string }): Promise<ClaimedDelivery[]>;
  /**
   * Applies attempt outcomes to deliveries still waiting or retrying, and updates each webhook's
   * failure count and last success. Returns the webhooks touched.
   */
  settle(outcomes: AttemptOutcome[]): Promise<Webhook[]>;
  /** The newest deliveries of a webhook, newest first, at most `limit` (whole; below 1 gives none). */
  deliveries(webhookId: string, limit: number): Promise<Delivery[]>;
  deliveryById(id: number): Promise<Delivery | null>;
  /** Every delivery of these events to a webhook (any cause), in id order. */
  deliveriesOfEvents(webhookId: string, eventIds: string[]): Promise<Delivery[]>;
  /** The stored payload of an event (kept while a delivery needs it), or null. */
  payloadById(id: string): Promise<WebhookPayload | null>;
  /**
   * An erasure (docs/privacy.md): in every stored payload of the workspace that shows one of these
   * records (itself or a link to it), those fields and the record's name become null, so that
   * pending and retried deliveries carry no erased value. Answers how many payloads changed.
   */
  redactPayloads(workspaceId: string, recordIds: readonly string[], fields: readonly string[]): Promise<number>;
  /**
   * Stores each payload (once per id, first stored wins) and a new delivery for each item, even
   * when the webhook already has one for that event (resend, recover). Returns them in order.
   */
  redeliver(items: Redelivery[], at: string, options?: { claimedUntil?: string }): Promise<Delivery[]>;

  /** Stores bulk members, ignoring ones already stored. */
  addBulkMembers(members: BulkMember[]): Promise<void>;
  bulkGroups(): Promise<BulkGroup[]>;
  /**
   * Marks the members as sent in `payload` and enqueues it to the webhooks, in one transaction.
   * False, and nothing written, when another dispatcher has sent one of the members already.
   */
  flushBulk(eventIds: string[], payload: WebhookPayload, webhookIds: string[], at: string): Promise<boolean>;

  /** Deletes deliveries created before `before`, then payloads and bulk members no delivery needs. */
  purge(before: string): Promise<number>;
  /** Operators' figures (GET /metrics), as of `now`. */
  deliveryStats(now: string): Promise<DeliveryStats>;
  close(): Promise<void>;
}

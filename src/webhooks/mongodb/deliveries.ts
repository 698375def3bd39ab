import type { Filter, UpdateFilter } from 'mongodb';
import type { AttemptOutcome, Delivery, Redelivery, WebhookPayload } from '../port.js';
import { ACTIVE, activeFilter, payloadToDoc, type DeliveryDoc, type PayloadDoc, type WebhookDoc } from './mapping.js';

/**
 * The pure half of the MongoDB webhook store for deliveries: enqueue plans, delivery documents,
 * the filters that claim, skip and settle them, and the fold of a batch of outcomes.
 */

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

import { attemptDelivery } from './attempt.js';
import type { WebhookSender } from './httpsSender.js';
import type { Delivery, Redelivery, Webhook, WebhookPayload, WebhookStore } from './port.js';

/**
 * Sending now from `csr` (test events, resends, recovered events): the deliveries are stored
 * claimed by this process, sent by the one sender and signer the dispatcher uses, and settled; a
 * failed one is then retried on the schedule by the dispatcher like any delivery.
 */

export interface SendNowDeps {
  webhooks: WebhookStore;
  sender: WebhookSender;
  retryDelaysMs: readonly number[];
  clock: () => Date;
}

/** How long this process holds what it sends now, so that no dispatcher claims it meanwhile. */
const SEND_NOW_LEASE_MS = 60_000;

/** `count` deliveries are sent one after the other: the lease covers each one's whole timeout (WEBHOOK_TIMEOUT is far below it). */
export function sendNowLease(clock: () => Date, count = 1): { at: string; claimedUntil: string } {
  const now = clock();
  return { at: now.toISOString(), claimedUntil: new Date(now.getTime() + SEND_NOW_LEASE_MS * Math.max(1, count)).toISOString() };
}

/** Sends stored, claimed deliveries one after the other (their order is kept) and returns them as they stand after. */
export async function sendClaimed(deps: SendNowDeps, webhook: Webhook, sent: { delivery: Delivery; payload: WebhookPayload }[]): Promise<Delivery[]> {
  const outcomes = [];
  for (const { delivery, payload } of sent) outcomes.push(await attemptDelivery({ delivery, webhook, payload }, deps.sender, deps.clock, deps.retryDelaysMs));
  if (outcomes.length > 0) await deps.webhooks.settle(outcomes);
  const after = await Promise.all(sent.map(({ delivery }) => deps.webhooks.deliveryById(delivery.id)));
  return after.filter((delivery): delivery is Delivery => delivery !== null);
}

/** Stores redeliveries claimed by this process and sends them in order. */
export async function redeliverNow(deps: SendNowDeps, webhook: Webhook, items: Redelivery[]): Promise<Delivery[]> {
  const { at, claimedUntil } = sendNowLease(deps.clock, items.length);
  const stored = await deps.webhooks.redeliver(items, at, { claimedUntil });
  return sendClaimed(deps, webhook, stored.map((delivery, index) => ({ delivery, payload: items[index]!.payload })));
}

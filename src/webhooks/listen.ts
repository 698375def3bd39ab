import { ValidationFailed } from '../core/errors.js';
import { attemptDelivery } from './attempt.js';
import type { WebhookSender } from './httpsSender.js';
import type { ClaimedDelivery, DeliveryStatus, Webhook, WebhookStore } from './port.js';

/**
 * `csr webhooks listen --forward-to`: the session's `csr` process pulls the deliveries of its
 * temporary (listener) webhook from the webhook store and posts them itself, one after the
 * other in the order they were made, with the one attempt code (body, sentAt, signature) of every
 * delivery and a loopback-only transport. The store hands a listener's deliveries to this claim
 * only; a failed one is retried on the usual schedule while the session runs.
 */

export interface ListenDeps {
  webhooks: WebhookStore;
  /** The loopback transport (loopbackSender.ts). */
  sender: WebhookSender;
  clock: () => Date;
  retryDelaysMs: readonly number[];
  timeoutMs: number;
}

/** One line of the session's output. */
export interface Forwarded {
  at: string;
  deliveryId: number;
  eventId: string;
  event: string;
  status: DeliveryStatus;
  responseCode: number | null;
  error: string | null;
  ms: number;
}

/** How often the store is asked for new deliveries while there were none. */
const POLL_MS = 100;
const BATCH = 50;

export async function forwardDeliveries(deps: ListenDeps, webhookId: string, signal: AbortSignal, onForwarded: (line: Forwarded) => void): Promise<void> {
  while (!signal.aborted) {
    const now = deps.clock();
    const leaseUntil = new Date(now.getTime() + (deps.timeoutMs + 5_000) * BATCH).toISOString();
    const claimed = await deps.webhooks.claimDue(now.toISOString(), leaseUntil, BATCH, (id) => (id === webhookId ? BATCH : 0), { listener: webhookId });
    claimed.sort((a, b) => a.delivery.id - b.delivery.id);
    for (const item of claimed) {
      // Stopping leaves the rest claimed: the session's webhook is removed next, with them.
      if (signal.aborted) break;
      onForwarded(await forwardOne(deps, item));
    }
    if (claimed.length === 0) await pause(POLL_MS, signal);
  }
}

async function forwardOne(deps: ListenDeps, claimed: ClaimedDelivery): Promise<Forwarded> {
  const started = performance.now();
  const outcome = await attemptDelivery(claimed, deps.sender, deps.clock, deps.retryDelaysMs);
  const ms = Math.round(performance.now() - started);
  await deps.webhooks.settle([outcome]);
  return {
    at: outcome.lastAttemptAt,
    deliveryId: claimed.delivery.id,
    eventId: claimed.payload.id,
    event: claimed.payload.event,
    status: outcome.status,
    responseCode: outcome.responseCode,
    error: outcome.error,
    ms,
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** Test, resend and recover send with the dispatchers' sender: a listen session's webhook is that session's to send. */
export function notListener(webhook: Webhook): Webhook {
  if (webhook.listener) throw new ValidationFailed(`webhook ${webhook.id} belongs to a \`csr webhooks listen\` session, which sends its deliveries itself`);
  return webhook;
}

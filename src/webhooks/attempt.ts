import { eventBody } from './body.js';
import type { WebhookSender } from './httpsSender.js';
import { afterAttempt } from './policy.js';
import type { AttemptOutcome, ClaimedDelivery } from './port.js';
import { signBody } from './signature.js';

/**
 * One delivery attempt (spec 6.3): the body with this attempt's sentAt, signed over its exact
 * bytes with the webhook's current secret, sent, and the delivery's next state decided.
 */
export async function attemptDelivery(
  { delivery, webhook, payload }: ClaimedDelivery,
  sender: WebhookSender,
  clock: () => Date,
  retryDelaysMs: readonly number[],
): Promise<AttemptOutcome> {
  const sentAt = clock().toISOString();
  const body = JSON.stringify(eventBody(payload, sentAt));
  const signature = signBody(body, webhook.secret);
  const result = await sender.send(webhook.url, body, {
    'X-SVC-Event': payload.event,
    'X-SVC-Delivery': String(delivery.id),
    'X-SVC-Timestamp': sentAt,
    'X-SVC-Signature': signature,
  });
  const outcome = afterAttempt(delivery, result, clock(), retryDelaysMs, { sentAt, signature });
  // Nothing is retried while a webhook is off, and switching it on skips what waited (spec 3.2):
  // a failed attempt `csr` makes to an off webhook (test, resend, recover) is final.
  if (!webhook.enabled && outcome.status === 'retrying') return { ...outcome, status: 'failed', nextAttemptAt: null };
  return outcome;
}

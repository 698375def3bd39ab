import { NotFound } from '../core/errors.js';
import type { Delivery } from './port.js';
import { notListener } from './listen.js';
import { redeliverNow, type SendNowDeps } from './sendNow.js';

/**
 * A new attempt of one delivery (issue 29): the same event id and payload, a new delivery id,
 * signed with the webhook's current secret, recorded with cause 'resend' and the original's id.
 */
export async function resendDelivery(deps: SendNowDeps, deliveryId: string): Promise<Delivery> {
  const id = /^[1-9][0-9]{0,15}$/.test(deliveryId) ? Number(deliveryId) : null;
  const original = id === null ? null : await deps.webhooks.deliveryById(id);
  if (!original) throw new NotFound(`delivery ${deliveryId} not found`);
  const webhook = await deps.webhooks.webhookById(original.webhookId);
  if (!webhook) throw new NotFound(`delivery ${deliveryId} not found`);
  notListener(webhook);
  const payload = await deps.webhooks.payloadById(original.eventId);
  if (!payload) throw new NotFound(`the event of delivery ${deliveryId} is no longer kept; use \`csr webhooks recover\` to send it again from the log`);
  const [resent] = await redeliverNow(deps, webhook, [{ payload, webhookId: webhook.id, cause: 'resend', originalId: original.id }]);
  return resent!;
}

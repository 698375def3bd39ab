import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures (spec 6.3, 6.5), for the sender and for receivers. This file depends on
 * node:crypto only, so a receiver can import it from the package or copy it as it is.
 */

/** `sha256=` + lowercase hex HMAC-SHA256 of the exact body bytes. */
export function signBody(body: string | Uint8Array, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Signatures older or newer than this are refused (spec 6.5: replay protection). */
export const SIGNATURE_MAX_AGE_MS = 5 * 60 * 1000;

export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

export type VerifyResult = { ok: true; event: WebhookEventBody } | { ok: false; reason: string };

export interface WebhookEventBody {
  id: string;
  event: string;
  object: string | null;
  source: string;
  occurredAt: string;
  sentAt: string;
  data: unknown;
}

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : bag[key];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Checks a received webhook: the signature over the raw body (before any JSON parsing), compared
 * in constant time; then that sentAt, inside the signed body, is within 5 minutes of `now`.
 * Returns the parsed event only when both hold.
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: HeaderBag, secret: string, now: Date = new Date()): VerifyResult {
  const received = header(headers, 'x-svc-signature');
  if (!received) return { ok: false, reason: 'missing X-SVC-Signature header' };
  const expected = Buffer.from(signBody(rawBody, secret));
  const given = Buffer.from(received);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'signature does not match' };

  let event: WebhookEventBody;
  try {
    event = JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8')) as WebhookEventBody;
  } catch {
    return { ok: false, reason: 'body is not JSON' };
  }
  const sentAt = Date.parse(event?.sentAt);
  if (Number.isNaN(sentAt)) return { ok: false, reason: 'body has no valid sentAt' };
  if (Math.abs(now.getTime() - sentAt) > SIGNATURE_MAX_AGE_MS) return { ok: false, reason: 'sentAt is more than 5 minutes away from now' };
  const timestamp = header(headers, 'x-svc-timestamp');
  if (timestamp !== undefined && timestamp !== event.sentAt) return { ok: false, reason: 'X-SVC-Timestamp does not equal sentAt' };
  return { ok: true, event };
}

import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures (spec 6.3, 6.5), for the sender and for receivers. This file depends on
 * node:crypto only, so a receiver can import it from the package (`customer-success-records/verify`)
 * or copy it as it is. Its behaviour is pinned by the test vectors in docs/webhooks.md.
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

/** Why a received webhook was refused. */
export type VerificationFailure = 'missing_header' | 'bad_signature' | 'malformed_body' | 'timestamp_out_of_tolerance' | 'timestamp_mismatch';

export class WebhookVerificationError extends Error {
  constructor(
    readonly code: VerificationFailure,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  /** The raw request body, exactly as received (before any JSON parsing). */
  payload: string | Uint8Array;
  headers: HeaderBag;
  secret: string;
  /** How far sentAt may be from now (spec 6.5: 5 minutes). */
  toleranceSeconds?: number;
  now?: Date;
}

/**
 * Verifies a received webhook and returns its event, or throws a WebhookVerificationError: the
 * signature over the raw body, compared in constant time; then that sentAt, inside the signed
 * body (so an old event cannot be replayed with a new time), is within the tolerance of now.
 */
export function verifyWebhook({ payload, headers, secret, toleranceSeconds = SIGNATURE_MAX_AGE_MS / 1000, now = new Date() }: VerifyOptions): WebhookEventBody {
  const received = header(headers, 'x-svc-signature');
  if (!received) throw new WebhookVerificationError('missing_header', 'missing X-SVC-Signature header');
  const expected = Buffer.from(signBody(payload, secret));
  const given = Buffer.from(received);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new WebhookVerificationError('bad_signature', 'signature does not match');

  let event: WebhookEventBody;
  try {
    event = JSON.parse(typeof payload === 'string' ? payload : Buffer.from(payload).toString('utf8')) as WebhookEventBody;
  } catch {
    throw new WebhookVerificationError('malformed_body', 'body is not JSON');
  }
  const sentAt = Date.parse(event?.sentAt);
  if (Number.isNaN(sentAt)) throw new WebhookVerificationError('malformed_body', 'body has no valid sentAt');
  if (Math.abs(now.getTime() - sentAt) > toleranceSeconds * 1000) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `sentAt is more than ${toleranceSeconds} seconds away from now`);
  }
  const timestamp = header(headers, 'x-svc-timestamp');
  if (timestamp !== undefined && timestamp !== event.sentAt) throw new WebhookVerificationError('timestamp_mismatch', 'X-SVC-Timestamp does not equal sentAt');
  return event;
}

/** verifyWebhook as a result instead of an exception: `{ ok: true, event }` or `{ ok: false, reason }`. */
export function checkWebhook(rawBody: string | Uint8Array, headers: HeaderBag, secret: string, now: Date = new Date()): VerifyResult {
  try {
    return { ok: true, event: verifyWebhook({ payload: rawBody, headers, secret, now }) };
  } catch (error) {
    if (error instanceof WebhookVerificationError) return { ok: false, reason: error.message };
    throw error;
  }
}

import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signBody, checkWebhook } from '../../src/webhooks/signature.js';

const secret = 'whsec_test';
const sentAt = '2026-01-01T12:00:00.000Z';
const body = JSON.stringify({ id: 'e1', event: 'clients.created', object: 'clients', source: 'api', occurredAt: '2026-01-01T11:59:59.500Z', sentAt, data: { id: 'r1', name: 'Acme' } });
const headers = { 'X-SVC-Signature': signBody(body, secret), 'X-SVC-Timestamp': sentAt };
const at = (offsetMs: number) => new Date(Date.parse(sentAt) + offsetMs);

describe('signBody', () => {
  it('is sha256= and the lowercase hex HMAC-SHA256 of the exact bytes', () => {
    expect(signBody(body, secret)).toBe(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
    expect(signBody(body, secret)).toMatch(/^sha256=[0-9a-f]{64}$/);
  });
});

describe('checkWebhook (spec 6.5)', () => {
  it('accepts the exact body with the right secret within 5 minutes, and returns the event', () => {
    const result = checkWebhook(body, headers, secret, at(4 * 60_000));
    expect(result).toEqual({ ok: true, event: JSON.parse(body) });
    expect(checkWebhook(Buffer.from(body), new Headers(headers), secret, at(-4 * 60_000)).ok).toBe(true);
    expect(checkWebhook(body, { 'x-svc-signature': headers['X-SVC-Signature'] }, secret, at(0)).ok).toBe(true);
  });

  it.each([
    ['a changed byte', body.replace('Acme', 'Acmf'), headers, secret, 0, 'signature does not match'],
    ['re-serialised JSON (not the exact bytes)', JSON.stringify(JSON.parse(body), null, 1), headers, secret, 0, 'signature does not match'],
    ['another secret', body, headers, 'whsec_other', 0, 'signature does not match'],
    ['a truncated signature', body, { ...headers, 'X-SVC-Signature': headers['X-SVC-Signature'].slice(0, 20) }, secret, 0, 'signature does not match'],
    ['no signature', body, { 'X-SVC-Timestamp': sentAt }, secret, 0, 'missing X-SVC-Signature header'],
    ['sentAt 5 minutes and 1 ms old (replay)', body, headers, secret, 5 * 60_000 + 1, 'sentAt is more than 300 seconds away from now'],
    ['sentAt 6 minutes in the future', body, headers, secret, -6 * 60_000, 'sentAt is more than 300 seconds away from now'],
    ['a timestamp header that is not sentAt', body, { ...headers, 'X-SVC-Timestamp': '2026-01-01T12:00:01.000Z' }, secret, 0, 'X-SVC-Timestamp does not equal sentAt'],
  ])('refuses %s', (_case, raw, given, key, offset, reason) => {
    expect(checkWebhook(raw, given as Record<string, string>, key, at(offset))).toEqual({ ok: false, reason });
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationFailed } from '../../src/core/errors.js';
import { appendAuditEvent } from '../../src/setup/audit.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';

/**
 * The address rule on a service that keeps it (no WEBHOOK_ALLOW_PRIVATE_TARGETS): refused when
 * saving, and again before every send. The address forms themselves are unit-tested in
 * test/unit/addressPolicy.test.ts; here they go through the use case and the sender.
 */

let h: WebhookHarness;

beforeAll(async () => {
  h = await startWebhookHarness({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false', WEBHOOK_RETRY_DELAYS: '50ms,50ms,50ms,50ms,50ms' });
});

afterAll(async () => {
  await h?.close();
});

const REFUSED_AT_SAVE = [
  'http://hooks.example.com/',
  'ftp://hooks.example.com/',
  'https://user:pass@hooks.example.com/',
  'not a url',
  'https://127.0.0.1/',
  'https://127.1/',
  'https://2130706433/',
  'https://0x7f000001/',
  'https://0177.0.0.1/',
  'https://0x7f.0.0.1/',
  'https://10.0.0.1/',
  'https://172.16.5.4/',
  'https://192.168.1.1/',
  'https://169.254.169.254/latest/meta-data/',
  'https://100.64.0.1/',
  'https://0.0.0.0/',
  'https://224.0.0.1/',
  'https://255.255.255.255/',
  'https://[::1]/',
  'https://[::]/',
  'https://[fe80::1]/',
  'https://[fc00::1]/',
  'https://[fd12:3456::1]/',
  'https://[ff02::1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:a9fe:a9fe]/',
  'https://[::127.0.0.1]/',
  'https://[64:ff9b::10.0.0.1]/',
  'https://[2002:c0a8:0101::1]/',
  'https://localhost/',
  'https://api.localhost/',
  'https://LOCALHOST./',
];

describe('SSRF guard at save', () => {
  it.each(REFUSED_AT_SAVE)('refuses %s', async (url) => {
    const refused = h.svc.webhooks.create(h.ws.slug, { name: 'evil', url });
    await expect(refused).rejects.toBeInstanceOf(ValidationFailed);
    await expect(refused).rejects.toThrow(/the webhook url is refused: /);
  });

  it('saves nothing when refused', async () => {
    expect(await h.svc.webhooks.list(h.ws.slug)).toEqual([]);
  });
});

describe('SSRF guard before every send', () => {
  it('a stored webhook whose address is (now) private is never contacted; the attempt fails with the reason', async () => {
    // As if it was saved while its name pointed at a public address, and now points inside.
    const webhookId = randomUUID();
    await h.svc.service.backends.webhooks.createWebhook({
      id: webhookId,
      workspaceId: h.ws.id,
      name: 'rebound',
      url: `${h.receiver.origin}/rebound`,
      events: 'all',
      objects: 'all',
      enabled: true,
      disabledReason: null,
      secret: 'whsec_x',
      createdAt: new Date().toISOString(),
      consecutiveFailures: 0,
      lastSuccessAt: null,
    });
    // The fan-out goes by the log (issue 22 item 4), so the creation is logged as setup logs it.
    await appendAuditEvent(h.svc.service.backends.events, { type: 'user', id: 'test', name: 'test' }, h.ws.id, 'WebhookCreated', {
      webhookId,
      events: 'all',
      objects: 'all',
    });
    expect((await h.api.post('/api/v1/clients', { name: 'Rebound Inc' })).status).toBe(201);
    const deliveries = await h.deliveriesWhen(webhookId, (statuses) => statuses[0] === 'failed');
    expect(deliveries[0]).toMatchObject({ status: 'failed', attempts: 6, responseCode: null, error: 'address refused: 127.0.0.1 is a loopback address' });
    expect(h.receiver.received('/rebound')).toEqual([]);
  });
});

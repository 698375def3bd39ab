import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceStream } from '../../../src/events/workspace.js';
import { RECEIVER_CA_FILE, startReceiver, type Receiver } from '../../support/receiver.js';
import { startTestService, type TestService, type TestWorkspace } from '../../support/service.js';
import { pageClient, signInLink } from '../../support/setupPage.js';

/** Webhooks on the Setup page: created, tested, switched, rotated, deliveries opened and resent. */

let svc: TestService;
let ws: TestWorkspace;
let receiver: Receiver;
let page: ReturnType<typeof pageClient>;
let webhookId: string;

beforeAll(async () => {
  receiver = await startReceiver();
  // No retry within the run: the failed test event's retry (1 minute by default) would add a
  // request and an attempt to the ones this file counts and compares, on a run slow enough.
  svc = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE, WEBHOOK_RETRY_DELAYS: '1h' });
  ws = await svc.workspace();
  await ws.addUser('Ana Admin', 'ana@example.com');
  page = pageClient(svc);
  await page.get(await signInLink(svc, ws.slug, { email: 'ana@example.com' }));
  const created = await page.post('/setup/webhooks', { name: 'CRM', url: `${receiver.origin}/crm`, events: ['created', 'updated'], objects: 'clients' });
  expect(created.status).toBe(200);
  webhookId = /href="\/setup\/webhooks\/([\w-]+)"/.exec(created.html)![1]!;
});
afterAll(async () => {
  await svc?.stop();
  await receiver?.close();
});

const secretOn = (html: string) => /id="new-secret" type="text" readonly="" value="([^"]+)"/.exec(html)?.[1];

describe('webhooks on the Setup page', () => {
  it('created with the chosen events and objects, its secret shown once', async () => {
    const [webhook] = await svc.webhooks.list(ws.slug);
    expect(webhook).toMatchObject({ id: webhookId, name: 'CRM', events: ['created', 'updated'], objects: ['clients'], enabled: true });
    const again = await page.get(`/setup/webhooks/${webhookId}`);
    expect(again.html).not.toContain(webhook!.secret);
  });

  it('sends the test event and shows its result, and the delivery in the list; a failing receiver is shown as such', async () => {
    const sent = await page.post(`/setup/webhooks/${webhookId}/test`, {});
    expect(sent.html).toContain('Test event: delivered, response 204');
    expect(receiver.received('/crm').at(-1)?.body).toMatchObject({ event: 'webhook.test' });
    expect(sent.html).toMatch(/<td>webhook\.test<\/td><td>delivered<\/td><td>204<\/td><td>1<\/td>/);
    receiver.on('/crm', 500);
    try {
      const failed = await page.post(`/setup/webhooks/${webhookId}/test`, {});
      expect(failed.html).toContain('response 500');
    } finally {
      receiver.on('/crm', 204);
    }
  });

  it('opens a delivery with its payload and the headers its last attempt was sent with, and resends it as a new delivery', async () => {
    const [delivery] = await svc.webhooks.deliveries(webhookId);
    const shown = await page.get(`/setup/deliveries/${delivery!.id}`);
    expect(shown.status).toBe(200);
    expect(shown.html).toContain(`X-SVC-Delivery: ${delivery!.id}`);
    expect(shown.html).toContain('&quot;event&quot;: &quot;webhook.test&quot;');
    // Exactly what the receiver got: the timestamp and signature of that attempt.
    const got = receiver.received('/crm').find((request) => request.headers['x-svc-delivery'] === String(delivery!.id))!;
    expect(shown.html).toContain(`X-SVC-Timestamp: ${got.headers['x-svc-timestamp']}`);
    expect(shown.html).toContain(`X-SVC-Signature: ${got.headers['x-svc-signature']}`);
    expect(shown.html).toContain(`&quot;sentAt&quot;: &quot;${got.headers['x-svc-timestamp']}&quot;`);
    const before = receiver.received('/crm').length;
    const resent = await page.post(`/setup/deliveries/${delivery!.id}/resend`, {});
    expect(resent.status).toBe(303);
    const newId = /\/setup\/deliveries\/(\d+)/.exec(resent.headers.get('Location')!)![1];
    expect(Number(newId)).toBeGreaterThan(delivery!.id);
    expect(receiver.received('/crm')).toHaveLength(before + 1);
    expect((await page.get(`/setup/deliveries/${newId}`)).html).toContain(`resend`);
  });

  it('switches off (showing why) and on again; rotates the secret, shown once and in force', async () => {
    const off = await page.post(`/setup/webhooks/${webhookId}/switch`, { on: 'no' });
    expect(off.html).toMatch(/class="off">off — [^<]+</);
    expect((await svc.service.backends.webhooks.webhookById(webhookId))?.enabled).toBe(false);
    const on = await page.post(`/setup/webhooks/${webhookId}/switch`, { on: 'yes' });
    expect(on.html).toContain('The webhook is on.');
    const rotated = await page.post(`/setup/webhooks/${webhookId}/rotate-secret`, {});
    const secret = secretOn(rotated.html);
    expect(secret).toMatch(/^whsec_/);
    expect((await svc.service.backends.webhooks.webhookById(webhookId))?.secret).toBe(secret);
    expect((await page.get(`/setup/webhooks/${webhookId}`)).html).not.toContain(secret!);
  });

  it('edits name, URL and filters with the same checks as creating: a refused URL comes back next to its field, nothing changed', async () => {
    const refused = await page.post(`/setup/webhooks/${webhookId}/edit`, { name: 'CRM v2', url: 'http://plain.example.com/hook', events: 'deleted' });
    expect(refused.status).toBe(422);
    expect(refused.html).toMatch(/id="webhook-url-error">the webhook url is refused: /);
    expect(refused.html).toContain('value="CRM v2"');
    expect(refused.html).toMatch(/value="deleted" checked=""/);
    expect(await svc.service.backends.webhooks.webhookById(webhookId)).toMatchObject({ name: 'CRM', events: ['created', 'updated'] });
    const saved = await page.post(`/setup/webhooks/${webhookId}/edit`, { name: 'CRM v2', url: `${receiver.origin}/crm` });
    expect(saved.html).toContain('Saved.');
    expect(await svc.service.backends.webhooks.webhookById(webhookId)).toMatchObject({ name: 'CRM v2', events: 'all', objects: 'all', enabled: true });
  });

  it('records every change in the audit trail as the signed-in user, via app, never with the secret', async () => {
    const events = await svc.service.backends.events.readStream(workspaceStream(ws.id), { direction: 'forwards', maxCount: 100 });
    const changes = events.filter((event) => event.type.startsWith('Webhook'));
    expect(changes.map((event) => event.type)).toEqual(
      expect.arrayContaining(['WebhookCreated', 'WebhookChanged', 'WebhookTestSent', 'WebhookSwitchedOff', 'WebhookSwitchedOn', 'WebhookSecretRotated']),
    );
    for (const event of changes) {
      expect(event.metadata).toMatchObject({ source: 'app', actor: { type: 'user', name: 'Ana Admin' } });
      expect(JSON.stringify(event.data)).not.toContain('whsec_');
    }
  });

  it("does not show or change another workspace's webhook or delivery", async () => {
    const other = await svc.workspace();
    const { webhook } = await svc.webhooks.create(other.slug, { name: 'Theirs', url: `${receiver.origin}/theirs` });
    const delivery = await svc.webhooks.test(webhook.id);
    expect((await page.get(`/setup/webhooks/${webhook.id}`)).status).toBe(404);
    expect((await page.get(`/setup/deliveries/${delivery.id}`)).status).toBe(404);
    expect((await page.post(`/setup/deliveries/${delivery.id}/resend`, {})).status).toBe(404);
    expect((await page.post(`/setup/webhooks/${webhook.id}/switch`, { on: 'no' })).status).toBe(404);
    expect((await svc.service.backends.webhooks.webhookById(webhook.id))?.enabled).toBe(true);
    expect((await page.get('/setup/deliveries/999999')).status).toBe(404);
    expect((await page.get('/setup/deliveries/abc')).status).toBe(404);
    expect((await page.get('/setup/webhooks/00000000-0000-0000-0000-000000000000')).status).toBe(404);
  });
});

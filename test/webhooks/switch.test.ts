import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceStream } from '../../src/setup/audit.js';
import { verifyWebhook } from '../../src/webhooks/signature.js';
import { startReceiver, RECEIVER_CA_FILE, type Receiver } from '../support/receiver.js';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/**
 * Switching off (by an admin and automatically), secret rotation and the test event (spec 3.2,
 * 6.1). The service's clock can be moved forward, to reach "no success for 24 h" in a test.
 */

const HOUR = 60 * 60 * 1000;
let offsetMs = 0;
let svc: TestService;
let receiver: Receiver;
let ws: TestWorkspace;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  receiver = await startReceiver();
  svc = await startTestService(
    { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE, WEBHOOK_RETRY_DELAYS: '50ms,50ms,50ms,50ms,50ms' },
    { clock: () => new Date(Date.now() + offsetMs) },
  );
  ws = await svc.workspace();
  api = client(svc.url, (await ws.key()).key);
});

afterAll(async () => {
  await svc?.stop();
  await receiver?.close();
});

const hookAt = (path: string) => svc.webhooks.create(ws.slug, { name: path, url: `${receiver.origin}${path}`, objects: ['contacts'] });
const createContact = async (firstName: string) => (await api.post('/api/v1/contacts', { firstName, lastName: `${Date.now()}` })).body.ids[0] as string;
const settle = (ms = 300) => new Promise((resolve) => setTimeout(resolve, ms));

describe('switch-off by an admin', () => {
  it('turns waiting deliveries into skipped, never sent; changes made while off are not queued; on again sends new changes only', async () => {
    const { webhook } = await hookAt('/paused');
    let answering = false;
    receiver.on('/paused', () => (answering ? 204 : 500));
    await createContact('Before');
    await receiver.waitFor('/paused', (requests) => requests.length >= 1);

    const off = await svc.webhooks.switch(webhook.id, false);
    expect(off).toMatchObject({ enabled: false, disabledReason: 'switched off by an administrator' });
    const sentWhileOn = receiver.received('/paused').length;
    expect((await svc.webhooks.deliveries(webhook.id)).map((d) => d.status)).toEqual(['skipped']);

    await createContact('While off');
    await settle();
    expect(receiver.received('/paused')).toHaveLength(sentWhileOn);
    expect(await svc.webhooks.deliveries(webhook.id)).toHaveLength(1);

    answering = true;
    expect(await svc.webhooks.switch(webhook.id, true)).toMatchObject({ enabled: true, disabledReason: null });
    await createContact('After');
    const requests = await receiver.waitFor('/paused', (all) => all.length === sentWhileOn + 1);
    expect(requests.at(-1)!.body.data.firstName).toBe('After');
    await settle();
    expect(receiver.received('/paused')).toHaveLength(sentWhileOn + 1);
  });
});

describe('automatic switch-off', () => {
  it('after at least 20 failed attempts in a row and no success for 24 h, with the reason in list, and an audit event', async () => {
    const { webhook } = await hookAt('/dead');
    receiver.on('/dead', 500);
    // 4 changes x 6 attempts = 24 failures, all within the first 24 h: the webhook stays on.
    for (let i = 0; i < 4; i++) await createContact(`Dead ${i}`);
    await receiver.waitFor('/dead', (requests) => requests.length >= 24);
    await settle(200);
    let [listed] = (await svc.webhooks.list(ws.slug)).filter((w) => w.id === webhook.id);
    expect(listed).toMatchObject({ enabled: true, consecutiveFailures: 24 });

    offsetMs = 25 * HOUR;
    await createContact('A day later');
    for (let i = 0; i < 100 && listed!.enabled; i++) {
      await settle(50);
      [listed] = (await svc.webhooks.list(ws.slug)).filter((w) => w.id === webhook.id);
    }
    expect(listed!.enabled).toBe(false);
    expect(listed!.disabledReason).toMatch(/^switched off automatically: \d+ failed attempts in a row and no successful delivery ever$/);
    const statuses = (await svc.webhooks.deliveries(webhook.id)).map((d) => d.status);
    expect(statuses).not.toContain('waiting');
    expect(statuses).not.toContain('retrying');
    const audit = await svc.service.backends.events.readStream(workspaceStream(ws.id));
    expect(audit.filter((event) => event.type === 'WebhookSwitchedOff').at(-1)).toMatchObject({ metadata: { actor: { type: 'system' } }, data: { webhookId: webhook.id } });
    offsetMs = 0;
  });
});

describe('secret rotation', () => {
  it('the next send is signed with the new secret, and the old one no longer verifies', async () => {
    const { webhook, secret: old } = await hookAt('/rotated');
    await createContact('Signed old');
    const [first] = await receiver.waitFor('/rotated', (requests) => requests.length === 1);
    expect(verifyWebhook(first!.rawBody, first!.headers, old).ok).toBe(true);

    const { secret } = await svc.webhooks.rotateSecret(webhook.id);
    expect(secret).not.toBe(old);
    await createContact('Signed new');
    const [, second] = await receiver.waitFor('/rotated', (requests) => requests.length === 2);
    expect(verifyWebhook(second!.rawBody, second!.headers, secret).ok).toBe(true);
    expect(verifyWebhook(second!.rawBody, second!.headers, old)).toEqual({ ok: false, reason: 'signature does not match' });
  });
});

describe('test event', () => {
  it('sends webhook.test at once and its result is in the deliveries list', async () => {
    const { webhook, secret } = await hookAt('/tested');
    const delivery = await svc.webhooks.test(webhook.id);
    expect(delivery).toMatchObject({ event: 'webhook.test', status: 'delivered', responseCode: 204, attempts: 1 });
    const [request] = receiver.received('/tested');
    expect(verifyWebhook(request!.rawBody, request!.headers, secret).ok).toBe(true);
    expect(request!.body).toEqual({
      id: delivery.eventId,
      event: 'webhook.test',
      object: null,
      source: 'app',
      occurredAt: expect.stringMatching(/Z$/),
      sentAt: request!.headers['x-svc-timestamp'],
      data: { webhook: { id: webhook.id, name: webhook.name } },
    });
    const logged = (await svc.service.backends.events.readStream(workspaceStream(ws.id))).find((event) => event.id === delivery.eventId);
    expect(request!.body.occurredAt).toBe(logged!.created.toISOString());
    expect((await svc.webhooks.deliveries(webhook.id))[0]).toEqual(delivery);
  });

  it('a failing test shows its error at once and is retried like any delivery', async () => {
    const { webhook } = await hookAt('/tested-failing');
    receiver.on('/tested-failing', (request) => (receiver.received('/tested-failing').indexOf(request) === 0 ? 500 : 204));
    const delivery = await svc.webhooks.test(webhook.id);
    expect(delivery).toMatchObject({ status: 'retrying', responseCode: 500, error: 'receiver answered 500', attempts: 1 });
    await receiver.waitFor('/tested-failing', (requests) => requests.length === 2);
    await settle(100);
    expect((await svc.webhooks.deliveries(webhook.id))[0]).toMatchObject({ status: 'delivered', attempts: 2 });
  });
});

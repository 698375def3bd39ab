import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceStream } from '../../src/events/workspace.js';
import { checkWebhook } from '../../src/webhooks/signature.js';
import type { Answer } from '../support/receiver.js';
import { eventually } from '../support/until.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';

/**
 * Switching off (by an admin and automatically), secret rotation and the test event (spec 3.2,
 * 6.1). The service's clock can be moved forward, to reach "no success for 24 h" in a test.
 */

const HOUR = 60 * 60 * 1000;
let offsetMs = 0;
let h: WebhookHarness;

beforeAll(async () => {
  h = await startWebhookHarness({ WEBHOOK_RETRY_DELAYS: '50ms,50ms,50ms,50ms,50ms' }, { clock: () => new Date(Date.now() + offsetMs) });
});

afterAll(async () => {
  await h?.close();
});

const hookAt = (path: string) => h.hook(path, { objects: ['contacts'] });
const createContact = async (firstName: string) => (await h.api.post('/api/v1/contacts', { firstName, lastName: `${Date.now()}` })).body.ids[0] as string;
const settle = (ms = 300) => new Promise((resolve) => setTimeout(resolve, ms));

describe('switch-off by an admin', () => {
  it('turns waiting deliveries into skipped, never sent; changes made while off are not queued; on again sends new changes only', async () => {
    const { webhook } = await hookAt('/paused');
    // The first change's attempt is held open until the switch-off is done, then fails: with it in
    // flight no retry can be made (nor all six, the delivery failed) before the switch-off, however
    // long the switch takes; and its failure, answered after the switch-off, must not bring a retry.
    let fail!: () => void;
    const failLater = new Promise<Answer>((resolve) => (fail = () => resolve(500)));
    h.receiver.on('/paused', (request) => (request.body.data.firstName === 'Before' ? failLater : 204));
    await createContact('Before');
    await h.receiver.waitFor('/paused', (requests) => requests.length >= 1);

    const off = await h.svc.webhooks.switch(webhook.id, false);
    expect(off).toMatchObject({ enabled: false, disabledReason: 'switched off by an administrator' });
    expect((await h.svc.webhooks.deliveries(webhook.id)).map((d) => d.status)).toEqual(['skipped']);
    fail();

    await createContact('While off');
    await settle();
    expect(h.receiver.received('/paused').map((request) => request.body.data.firstName)).toEqual(['Before']);
    expect((await h.svc.webhooks.deliveries(webhook.id)).map((d) => d.status)).toEqual(['skipped']);

    expect(await h.svc.webhooks.switch(webhook.id, true)).toMatchObject({ enabled: true, disabledReason: null });
    await createContact('After');
    const requests = await h.receiver.waitFor('/paused', (all) => all.length === 2);
    expect(requests.at(-1)!.body.data.firstName).toBe('After');
    await settle();
    expect(h.receiver.received('/paused')).toHaveLength(2);
  });
});

describe('automatic switch-off', () => {
  it('after at least 20 failed attempts in a row and no success for 24 h, with the reason in list, and an audit event', async () => {
    const { webhook } = await hookAt('/dead');
    h.receiver.on('/dead', 500);
    // 4 changes x 6 attempts = 24 failures, all within the first 24 h: the webhook stays on.
    for (let i = 0; i < 4; i++) await createContact(`Dead ${i}`);
    await h.receiver.waitFor('/dead', (requests) => requests.length >= 24);
    // The last answer is recorded a moment after it arrives (outcomes are written in batches).
    const dead = () => h.svc.webhooks.list(h.ws.slug).then((all) => all.find((w) => w.id === webhook.id)!);
    let listed = await eventually(dead, (hook) => hook.consecutiveFailures >= 24, 20_000, 'the failures counted');
    expect(listed).toMatchObject({ enabled: true, consecutiveFailures: 24 });

    offsetMs = 25 * HOUR;
    await createContact('A day later');
    listed = await eventually(dead, (hook) => !hook.enabled, 20_000, 'the webhook switched off');
    expect(listed.enabled).toBe(false);
    expect(listed.disabledReason).toMatch(/^switched off automatically: \d+ failed attempts in a row and no successful delivery ever$/);
    // When: the commit time of the switch-off in the log (the service's clock is a day ahead here).
    expect(Date.parse(listed.disabledAt!)).toBeGreaterThan(Date.now() - 60_000);
    const statuses = (await h.svc.webhooks.deliveries(webhook.id)).map((d) => d.status);
    expect(statuses).not.toContain('waiting');
    expect(statuses).not.toContain('retrying');
    const audit = await h.svc.service.backends.events.readStream(workspaceStream(h.ws.id));
    expect(audit.filter((event) => event.type === 'WebhookSwitchedOff').at(-1)).toMatchObject({ metadata: { actor: { type: 'system' } }, data: { webhookId: webhook.id } });
    offsetMs = 0;
  });
});

describe('secret rotation', () => {
  it('the next send is signed with the new secret, and the old one no longer verifies', async () => {
    const { webhook, secret: old } = await hookAt('/rotated');
    await createContact('Signed old');
    const [first] = await h.receiver.waitFor('/rotated', (requests) => requests.length === 1);
    expect(checkWebhook(first!.rawBody, first!.headers, old).ok).toBe(true);

    const { secret } = await h.svc.webhooks.rotateSecret(webhook.id);
    expect(secret).not.toBe(old);
    await createContact('Signed new');
    const [, second] = await h.receiver.waitFor('/rotated', (requests) => requests.length === 2);
    expect(checkWebhook(second!.rawBody, second!.headers, secret).ok).toBe(true);
    expect(checkWebhook(second!.rawBody, second!.headers, old)).toEqual({ ok: false, reason: 'signature does not match' });
  });
});

describe('test event', () => {
  it('sends webhook.test at once and its result is in the deliveries list', async () => {
    const { webhook, secret } = await hookAt('/tested');
    const delivery = await h.svc.webhooks.test(webhook.id);
    expect(delivery).toMatchObject({ event: 'webhook.test', status: 'delivered', responseCode: 204, attempts: 1 });
    const [request] = h.receiver.received('/tested');
    expect(checkWebhook(request!.rawBody, request!.headers, secret).ok).toBe(true);
    expect(request!.body).toEqual({
      id: delivery.eventId,
      event: 'webhook.test',
      object: null,
      source: 'app',
      occurredAt: expect.stringMatching(/Z$/),
      sentAt: request!.headers['x-svc-timestamp'],
      data: { webhook: { id: webhook.id, name: webhook.name } },
    });
    const logged = (await h.svc.service.backends.events.readStream(workspaceStream(h.ws.id))).find((event) => event.id === delivery.eventId);
    expect(request!.body.occurredAt).toBe(logged!.created.toISOString());
    expect((await h.svc.webhooks.deliveries(webhook.id))[0]).toEqual(delivery);
  });

  it('a failing test shows its error at once and is retried like any delivery', async () => {
    const { webhook } = await hookAt('/tested-failing');
    h.receiver.on('/tested-failing', (request) => (h.receiver.received('/tested-failing').indexOf(request) === 0 ? 500 : 204));
    const delivery = await h.svc.webhooks.test(webhook.id);
    expect(delivery).toMatchObject({ status: 'retrying', responseCode: 500, error: 'receiver answered 500', attempts: 1 });
    await h.receiver.waitFor('/tested-failing', (requests) => requests.length === 2);
    const [retried] = await h.deliveriesWhen(webhook.id, (statuses) => statuses[0] !== 'retrying');
    expect(retried).toMatchObject({ status: 'delivered', attempts: 2 });
  });
});

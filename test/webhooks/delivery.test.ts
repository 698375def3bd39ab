import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import { checkWebhook } from '../../src/webhooks/signature.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';

/**
 * Spec 6.3 to the letter, through the public surface: records written over HTTP, webhooks made
 * as `csr` makes them, requests received by a real HTTPS receiver on loopback.
 */

let h: WebhookHarness;

beforeAll(async () => {
  h = await startWebhookHarness({ WEBHOOK_RETRY_DELAYS: '100ms,100ms,100ms,100ms,100ms' }, { keyName: 'Zapier' });
});

afterAll(async () => {
  await h?.close();
});

const webhook = (path: string, options: { events?: string[]; objects?: string[] } = {}) => h.hook(path, { name: `hook ${path}`, ...options });

describe('the request to the receiver (spec 6.3)', () => {
  it('a created record is sent signed, with every header and body field, the record in REST format and occurredAt from the log', async () => {
    const { webhook: hook, secret } = await webhook('/created');
    const userId = await h.ws.addUser('Ana Lima', 'ana@acme.test');
    const created = await h.api.post('/api/v1/clients', { name: 'Acme', industry: 'Retail', owner: 'ana@acme.test' });
    expect(created.status).toBe(201);
    const id = created.body.ids[0];

    const [request] = await h.receiver.waitFor('/created', (requests) => requests.length === 1);
    const { headers, body, rawBody } = request!;
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-svc-event']).toBe('clients.created');
    expect(headers['x-svc-delivery']).toMatch(/^\d+$/);
    expect(headers['x-svc-timestamp']).toBe(body.sentAt);
    expect(headers['x-svc-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(checkWebhook(rawBody, headers, secret)).toMatchObject({ ok: true });
    expect(checkWebhook(rawBody, headers, 'whsec_wrong')).toEqual({ ok: false, reason: 'signature does not match' });

    expect(Object.keys(body)).toEqual(['id', 'event', 'object', 'source', 'occurredAt', 'sentAt', 'data']);
    const [logged] = await h.svc.service.backends.events.readStream(recordStream(id));
    expect(body).toMatchObject({ id: logged!.id, event: 'clients.created', object: 'clients', source: 'api', occurredAt: logged!.created.toISOString() });
    expect(body.occurredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(body.sentAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(body.data).toEqual((await h.api.get(`/api/v1/clients/${id}`)).body.data);
    expect(body.data.owner).toEqual({ id: userId, name: 'Ana Lima' });

    // The receiver's answer is settled a moment after it arrives (outcomes are written in batches).
    const deliveries = await h.deliveriesWhen(hook.id, (statuses) => statuses[0] !== 'waiting');
    expect(deliveries).toEqual([
      expect.objectContaining({ id: Number(headers['x-svc-delivery']), eventId: logged!.id, event: 'clients.created', status: 'delivered', responseCode: 204, attempts: 1, error: null }),
    ]);
  });

  it('an update sends the record as it is when first sent; a delete sends it as last saved', async () => {
    const created = await h.api.post('/api/v1/clients', { name: 'Globex', industry: 'Tech' });
    const id = created.body.ids[0];
    await webhook('/lifecycle');
    const patched = await h.api.patch(`/api/v1/clients/${id}`, { industry: 'Energy' });
    expect(patched.status).toBe(200);
    const [updated] = await h.receiver.waitFor('/lifecycle', (requests) => requests.length === 1);
    expect(updated!.body).toMatchObject({ event: 'clients.updated', data: patched.body.data });

    const deleted = await h.api.delete(`/api/v1/clients/${id}`);
    expect(deleted.status).toBe(200);
    const requests = await h.receiver.waitFor('/lifecycle', (all) => all.length === 2);
    expect(requests[1]!.body).toMatchObject({ event: 'clients.deleted', object: 'clients', data: patched.body.data });
  });

  it('the event id is the same for every webhook receiving a change; each webhook has its own delivery number', async () => {
    await webhook('/twin-a');
    await webhook('/twin-b');
    await h.api.post('/api/v1/contacts', { firstName: 'Ana', lastName: 'Twin' });
    const [a] = await h.receiver.waitFor('/twin-a', (requests) => requests.length === 1);
    const [b] = await h.receiver.waitFor('/twin-b', (requests) => requests.length === 1);
    expect(a!.body.id).toBe(b!.body.id);
    expect(a!.headers['x-svc-delivery']).not.toBe(b!.headers['x-svc-delivery']);
  });

  it('only the chosen objects and event kinds are sent', async () => {
    await webhook('/deletes-of-meetings', { objects: ['meetings'], events: ['deleted'] });
    const client1 = await h.api.post('/api/v1/clients', { name: 'Initech' });
    const meeting = await h.api.post('/api/v1/meetings', { title: 'QBR', client: client1.body.ids[0], start: '2026-01-01T10:00:00.000Z', status: 'Scheduled' });
    const meetingId = meeting.body.ids[0];
    await h.api.patch(`/api/v1/meetings/${meetingId}`, { title: 'QBR 2' });
    await h.api.delete(`/api/v1/clients/${client1.body.ids[0]}`);
    await h.api.delete(`/api/v1/meetings/${meetingId}`);
    const [only] = await h.receiver.waitFor('/deletes-of-meetings', (requests) => requests.length >= 1);
    expect(only!.body).toMatchObject({ event: 'meetings.deleted', data: { id: meetingId, title: 'QBR 2' } });
    // The other changes were made before the delete, so they would have been sent before it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.receiver.received('/deletes-of-meetings')).toHaveLength(1);
  });
});

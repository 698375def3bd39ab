import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService } from '../support/service.js';

/** PRODUCT.md "Idempotency" (issue 22 item 13), through the public HTTP surface. */

let now = Date.now();
const clock = () => new Date(now);
let svc: TestService;
let api: ReturnType<typeof client>;
let readOnly: ReturnType<typeof client>;
let contactsOnly: ReturnType<typeof client>;
beforeAll(async () => {
  svc = await startTestService({}, { clock });
  const ws = await svc.workspace();
  api = client(svc.url, (await ws.key()).key);
  readOnly = client(svc.url, (await ws.key({ readOnly: true })).key);
  contactsOnly = client(svc.url, (await ws.key({ objects: ['contacts'] })).key);
});
afterAll(() => svc.stop());

const withKey = (key: string) => ({ 'Idempotency-Key': key });
const total = async (path: string) => (await api.get(path)).body.total as number;

describe('Idempotency-Key', () => {
  it('answers a repeated POST with the first answer and creates nothing more', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Billed' })).body.ids[0];
    const invoice = (await api.post('/api/v1/billing', { client: clientId, status: 'Draft' })).body.ids[0];
    const body = { invoice, description: 'Setup fee', quantity: 1, unitPrice: 10 };
    const first = await api.post('/api/v1/invoiceLines', body, withKey('post-1'));
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const again = await api.post('/api/v1/invoiceLines', body, withKey('post-1'));
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await total('/api/v1/invoiceLines?description=Setup%20fee')).toBe(1);
  });

  it('refuses the key for another body, another path or another method (422)', async () => {
    await api.post('/api/v1/clients', { name: 'Keyed' }, withKey('reuse'));
    const otherBody = await api.post('/api/v1/clients', { name: 'Other' }, withKey('reuse'));
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error.message).toMatch(/Idempotency-Key was already used for another request/);
    expect((await api.post('/api/v1/contacts', { name: 'Keyed' }, withKey('reuse'))).status).toBe(422);
    expect(await total('/api/v1/clients?name=Other')).toBe(0);
  });

  it('refuses a key that is empty, longer than 255 characters or not printable (422)', async () => {
    for (const key of ['', 'x'.repeat(256), 'caf\u00e9']) {
      const response = await api.post('/api/v1/clients', { name: `Bad key ${key.length}` }, withKey(key));
      expect(response.status, key).toBe(422);
      expect(response.body.error.message).toMatch(/Idempotency-Key must be 1 to 255 printable/);
    }
    expect((await api.post('/api/v1/clients', { name: 'Long key ok' }, withKey('y'.repeat(255)))).status).toBe(201);
  });

  it('replays a PATCH without applying it again, even after a later change', async () => {
    const id = (await api.post('/api/v1/clients', { name: 'Patched', tier: 'SMB' })).body.ids[0];
    const first = await api.request('PATCH', `/api/v1/clients/${id}`, { tier: 'Enterprise' }, withKey('patch-1'));
    expect(first.status).toBe(200);
    expect((await api.patch(`/api/v1/clients/${id}`, { tier: 'Mid-Market' })).status).toBe(200);
    const again = await api.request('PATCH', `/api/v1/clients/${id}`, { tier: 'Enterprise' }, withKey('patch-1'));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await api.get(`/api/v1/clients/${id}`)).body.data.tier).toBe('Mid-Market');
  });

  it('replays a DELETE with its first answer instead of a 404', async () => {
    const id = (await api.post('/api/v1/clients', { name: 'Deleted once' })).body.ids[0];
    const first = await api.request('DELETE', `/api/v1/clients/${id}`, undefined, withKey('delete-1'));
    expect(first.status).toBe(200);
    const again = await api.request('DELETE', `/api/v1/clients/${id}`, undefined, withKey('delete-1'));
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ deleted: id });
  });

  it('replays a 4xx answer too: the request is not run again', async () => {
    const first = await api.post('/api/v1/clients', { tier: 'SMB' }, withKey('bad-1'));
    expect(first.status).toBe(422);
    const again = await api.post('/api/v1/clients', { tier: 'SMB' }, withKey('bad-1'));
    expect(again).toMatchObject({ status: 422, body: first.body });
  });

  it("never gives another API key the first key's answer: a read-only key is refused (403), a key without the object gets no replay", async () => {
    const body = { name: 'Written by the full key' };
    const first = await api.post('/api/v1/clients', body, withKey('shared-1'));
    expect(first.status).toBe(201);
    const byReadOnly = await readOnly.post('/api/v1/clients', body, withKey('shared-1'));
    expect(byReadOnly.status).toBe(403);
    expect(byReadOnly.body.error.message).toMatch(/read only/);
    expect(byReadOnly.headers.get('idempotent-replayed')).toBeNull();
    const byOtherKey = await contactsOnly.post('/api/v1/clients', body, withKey('shared-1'));
    expect(byOtherKey.status).toBe(422);
    expect(byOtherKey.body).not.toHaveProperty('ids');
    expect(byOtherKey.headers.get('idempotent-replayed')).toBeNull();
    expect(await total('/api/v1/clients?name=Written%20by%20the%20full%20key')).toBe(1);
  });

  it('forgets a key after 24 hours', async () => {
    await api.post('/api/v1/clients', { name: 'Day one' }, withKey('daily'));
    now += 24 * 3600_000 + 1000;
    const next = await api.post('/api/v1/clients', { name: 'Day two' }, withKey('daily'));
    expect(next.status).toBe(201);
    expect(next.headers.get('idempotent-replayed')).toBeNull();
  });

  it('holds across a restart and in another API process on the same store', async () => {
    const body = { name: 'Durable key' };
    const ws = await svc.workspace();
    const key = (await ws.key()).key;
    const first = await client(svc.url, key).post('/api/v1/clients', body, withKey('durable'));
    const other = await startTestService({ ROLES: 'api' }, { clock, dataDir: svc.dataDir });
    try {
      const again = await client(other.url, key).post('/api/v1/clients', body, withKey('durable'));
      expect(again).toMatchObject({ status: 201, body: first.body });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      await other.stop();
    }
  });
});

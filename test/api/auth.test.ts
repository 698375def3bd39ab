import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_RECHECK_MS, openSqliteSetupStore } from '../../src/setup/sqlite/index.js';
import { client, startTestService, type TestService } from '../support/service.js';

/** Spec section 5: bearer keys, read only vs read & write, chosen objects, revocation, isolation. */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

describe('authentication', () => {
  it('answers 401 with an Error body for a missing, malformed or wrong key', async () => {
    for (const headers of [{} as Record<string, string>, { Authorization: 'Basic abc' }, { Authorization: 'Bearer' }, { Authorization: 'Bearer csr_wrong' }]) {
      const response = await fetch(`${svc.url}/api/v1/clients`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      const body = await response.json();
      expect(body).toEqual({ error: { status: 401, message: expect.any(String) } });
    }
  });

  it('revocation takes effect on the next request', async () => {
    const ws = await svc.workspace();
    const { key, record } = await ws.key();
    const api = client(svc, key);
    expect((await api.get('/api/v1/clients')).status).toBe(200);
    await svc.service.backends.setup.revokeKey(record.id, new Date().toISOString());
    expect((await api.get('/api/v1/clients')).status).toBe(401);
  });

  it('a revocation by another connection (the csr tool) takes effect within KEY_RECHECK_MS, after the key was cached', async () => {
    const ws = await svc.workspace();
    const { key, record } = await ws.key();
    const api = client(svc, key);
    for (let i = 0; i < 3; i++) expect((await api.get('/api/v1/clients')).status).toBe(200);
    // The service last looked at the file no later than now (the same clock, in this process).
    const lastLookedAt = performance.now();
    const csr = openSqliteSetupStore({ path: join(svc.dataDir, 'setup.db') });
    try {
      await csr.revokeKey(record.id, new Date().toISOString());
    } finally {
      await csr.close();
    }
    // Measured rather than slept: a timer may fire a little before its delay has passed by
    // performance.now(), which the key cache goes by.
    while (performance.now() - lastLookedAt <= KEY_RECHECK_MS) await new Promise((resolve) => setTimeout(resolve, 1));
    expect((await api.get('/api/v1/clients')).status).toBe(401);
  });

  it('a store that can only answer asynchronously (as the MongoDB one) is waited for: the key is admitted, and refused at once once revoked', async () => {
    const setup = svc.service.backends.setup;
    const answerNow = setup.keyByFingerprintNow;
    let asked = 0;
    setup.keyByFingerprintNow = () => {
      asked++;
      return undefined;
    };
    try {
      const ws = await svc.workspace();
      const { key, record } = await ws.key();
      const api = client(svc, key);
      asked = 0;
      expect((await api.get('/api/v1/clients')).status).toBe(200);
      expect((await api.get('/api/v1/clients/not-an-id')).status).toBe(404);
      await setup.revokeKey(record.id, new Date().toISOString());
      expect((await api.get('/api/v1/clients')).status).toBe(401);
      expect(asked).toBeGreaterThanOrEqual(3);
    } finally {
      setup.keyByFingerprintNow = answerNow;
    }
  });

  it('records when a key was last used', async () => {
    const ws = await svc.workspace();
    const { key, record } = await ws.key();
    await client(svc, key).get('/api/v1/clients');
    // Written after the answer (off the request's path): generous for a busy machine.
    await expect.poll(async () => (await svc.service.backends.setup.keyById(record.id))?.lastUsedAt, { timeout: 20_000 }).not.toBeNull();
  });
});

describe('authorisation', () => {
  it('a read-only key reads but every write is 403 and changes nothing', async () => {
    const ws = await svc.workspace();
    const writer = client(svc, (await ws.key()).key);
    const reader = client(svc, (await ws.key({ readOnly: true })).key);
    const id = (await writer.post('/api/v1/clients', { name: 'Read Me' })).body.ids[0];
    expect((await reader.get(`/api/v1/clients/${id}`)).status).toBe(200);
    for (const response of [
      await reader.post('/api/v1/clients', { name: 'Nope' }),
      await reader.patch(`/api/v1/clients/${id}`, { name: 'Nope' }),
      await reader.delete(`/api/v1/clients/${id}`),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.error.status).toBe(403);
    }
    expect((await reader.get('/api/v1/clients')).body.data.map((r: any) => r.name)).toEqual(['Read Me']);
  });

  it('a key limited to chosen objects gets 403 elsewhere and sees links to them as { id } only', async () => {
    const ws = await svc.workspace();
    const admin = client(svc, (await ws.key()).key);
    const limited = client(svc, (await ws.key({ objects: ['contacts'] })).key);
    const clientId = (await admin.post('/api/v1/clients', { name: 'Hidden Co' })).body.ids[0];
    const contactId = (await admin.post('/api/v1/contacts', { firstName: 'Vis', client: clientId })).body.ids[0];
    expect((await limited.get('/api/v1/clients')).status).toBe(403);
    expect((await limited.get(`/api/v1/clients/${clientId}`)).status).toBe(403);
    const contact = (await limited.get(`/api/v1/contacts/${contactId}`)).body.data;
    expect(contact.client).toEqual({ id: clientId });
    expect((await admin.get(`/api/v1/contacts/${contactId}`)).body.data.client).toEqual({ id: clientId, name: 'Hidden Co' });
  });

  it('workspaces are isolated: another workspace record is a 404, even by id', async () => {
    const a = await svc.workspaceClient();
    const b = await svc.workspaceClient();
    const id = (await a.post('/api/v1/clients', { name: 'Mine' })).body.ids[0];
    expect((await b.get(`/api/v1/clients/${id}`)).status).toBe(404);
    expect((await b.patch(`/api/v1/clients/${id}`, { name: 'Stolen' })).status).toBe(404);
    expect((await b.delete(`/api/v1/clients/${id}`)).status).toBe(404);
    expect((await b.post('/api/v1/clients', { id, name: 'Stolen' })).status).toBe(422);
    expect((await b.get('/api/v1/clients')).body.total).toBe(0);
    expect((await b.post('/api/v1/contacts', { firstName: 'X', client: id })).status).toBe(422);
    expect((await a.get(`/api/v1/clients/${id}`)).body.data.name).toBe('Mine');
  });
});

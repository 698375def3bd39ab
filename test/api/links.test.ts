import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/** Links and people (spec 2.2, PRODUCT.md section 3): by id, { id }, name or email; returned as { id, name }. */

let svc: TestService;
let ws: TestWorkspace;
let api: ReturnType<typeof client>;
let acme: string;
let ana: string;

beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.workspace();
  api = client(svc, (await ws.key()).key);
  acme = (await api.post('/api/v1/clients', { name: 'Acme' })).body.ids[0];
  ana = await ws.addUser('Ana Lima', 'ana@x.test');
});
afterAll(() => svc.stop());

describe('links', () => {
  it('resolve by id, { id } and name (case-insensitive) and render as { id, name }', async () => {
    for (const client of [acme, { id: acme }, 'ACME']) {
      const saved = await api.post('/api/v1/contacts', { firstName: 'L', lastName: JSON.stringify(client).slice(0, 8), client });
      expect(saved.status, JSON.stringify(saved.body)).toBe(201);
      const contact = (await api.get(`/api/v1/contacts/${saved.body.ids[0]}`)).body.data;
      expect(contact.client).toEqual({ id: acme, name: 'Acme' });
    }
  });

  it('fail the record when nothing or several records match', async () => {
    expect((await api.post('/api/v1/contacts', { firstName: 'X', client: 'Nobody Inc' })).body.errors[0].message).toMatch(/client/);
    expect((await api.post('/api/v1/contacts', { firstName: 'X', client: { id: '00000000-0000-4000-8000-000000000000' } })).status).toBe(422);
    await api.post('/api/v1/clients?match=name,tier', [{ name: 'Twin', tier: 'SMB' }, { name: 'Twin', tier: 'Enterprise' }]);
    const ambiguous = await api.post('/api/v1/contacts', { firstName: 'X', client: 'twin' });
    expect(ambiguous.status).toBe(422);
    expect(ambiguous.body.errors[0].message).toMatch(/ambiguous/);
  });

  it('link lists render every link and filters find records by a linked id', async () => {
    const c1 = (await api.post('/api/v1/contacts', { firstName: 'Cee', lastName: 'One' })).body.ids[0];
    const c2 = (await api.post('/api/v1/contacts', { firstName: 'Cee', lastName: 'Two' })).body.ids[0];
    const saved = await api.post('/api/v1/meetings', { title: 'Sync', start: '2024-05-01T10:00:00Z', status: 'Scheduled', contacts: [c1, 'cee two'] });
    const meeting = (await api.get(`/api/v1/meetings/${saved.body.ids[0]}`)).body.data;
    expect(meeting.contacts).toEqual([{ id: c1, name: 'Cee One' }, { id: c2, name: 'Cee Two' }]);
    expect((await api.get(`/api/v1/meetings?contacts=${c2}`)).body.total).toBe(1);
  });

  it('a renamed record shows its new name in links', async () => {
    const id = (await api.post('/api/v1/clients', { name: 'Old Name' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'R', client: id })).body.ids[0];
    await api.patch(`/api/v1/clients/${id}`, { name: 'New Name' });
    expect((await api.get(`/api/v1/contacts/${contact}`)).body.data.client).toEqual({ id, name: 'New Name' });
  });
});

describe('people', () => {
  it('resolve by id, { id }, email and full name', async () => {
    for (const owner of [ana, { id: ana }, 'ANA@x.test', 'ana lima']) {
      const saved = await api.post('/api/v1/clients', { name: `Owned ${JSON.stringify(owner)}`, owner });
      expect(saved.status, JSON.stringify(saved.body)).toBe(201);
      expect((await api.get(`/api/v1/clients/${saved.body.ids[0]}`)).body.data.owner).toEqual({ id: ana, name: 'Ana Lima' });
    }
    expect((await api.post('/api/v1/clients', { name: 'Unowned', owner: 'nobody@x.test' })).status).toBe(422);
  });
});

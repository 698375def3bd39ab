import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/** GET /api/v1/{object}/{id}/history (issue 23): who changed what, when, through which key; masked as GET masks. */

let svc: TestService;
let ws: TestWorkspace;
let crm: ReturnType<typeof client>;
let zapier: ReturnType<typeof client>;
let zapierKeyId: string;
let acme: string;
let contact: string;

beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.workspace();
  const crmKey = await ws.key({ name: 'CRM sync' });
  const zapierKey = await ws.key({ name: 'Zapier' });
  zapierKeyId = zapierKey.record.id;
  crm = client(svc, crmKey.key);
  zapier = client(svc, zapierKey.key);
  acme = (await crm.post('/api/v1/clients', { name: 'Acme' })).body.ids[0];
  contact = (await crm.post('/api/v1/contacts', { firstName: 'Ana', lastName: 'Lima', client: acme })).body.ids[0];
  expect((await zapier.patch(`/api/v1/contacts/${contact}`, { role: 'CFO', lastName: null })).status).toBe(200);
  expect((await zapier.delete(`/api/v1/contacts/${contact}`)).status).toBe(200);
});
afterAll(() => svc.stop());

describe('record history', () => {
  it('lists every change oldest first, with the key and its name as they were, ending with the deletion', async () => {
    const answer = await crm.get(`/api/v1/contacts/${contact}/history`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ total: 3, limit: 100, offset: 0 });
    const [created, updated, deleted] = answer.body.data;
    expect(created).toMatchObject({
      revision: 0,
      event: 'created',
      source: 'api',
      actor: { type: 'apiKey', name: 'CRM sync' },
      via: 'via API · CRM sync',
      changes: { firstName: { from: null, to: 'Ana' }, lastName: { from: null, to: 'Lima' }, client: { from: null, to: { id: acme, name: 'Acme' } } },
    });
    expect(Object.keys(created.changes)).toEqual(['firstName', 'lastName', 'client']);
    expect(updated).toEqual({
      revision: 1,
      event: 'updated',
      occurredAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      source: 'api',
      actor: { type: 'apiKey', id: zapierKeyId, name: 'Zapier' },
      via: 'via API · Zapier',
      changes: { lastName: { from: 'Lima', to: null }, role: { from: null, to: 'CFO' } },
    });
    expect(deleted).toMatchObject({ revision: 2, event: 'deleted', via: 'via API · Zapier', changes: {} });
    expect(Date.parse(created.occurredAt)).toBeLessThanOrEqual(Date.parse(deleted.occurredAt));
  });

  it('names a linked record as it was when the change was made, not as it is now', async () => {
    const old = (await crm.post('/api/v1/clients', { name: 'Old Name' })).body.ids[0];
    const other = (await crm.post('/api/v1/clients', { name: 'Other' })).body.ids[0];
    const person = (await crm.post('/api/v1/contacts', { firstName: 'Bo', lastName: 'Ek', client: old })).body.ids[0];
    expect((await crm.patch(`/api/v1/clients/${old}`, { name: 'New Name' })).status).toBe(200);
    expect((await crm.patch(`/api/v1/contacts/${person}`, { client: other })).status).toBe(200);
    expect((await crm.patch(`/api/v1/clients/${other}`, { name: 'Other Renamed' })).status).toBe(200);
    expect((await crm.delete(`/api/v1/clients/${old}`)).status).toBe(200);
    const [created, moved] = (await crm.get(`/api/v1/contacts/${person}/history`)).body.data;
    expect(created.changes.client).toEqual({ from: null, to: { id: old, name: 'Old Name' } });
    expect(moved.changes.client).toEqual({ from: { id: old, name: 'New Name' }, to: { id: other, name: 'Other' } });
    // GET shows the names of now.
    expect((await crm.get(`/api/v1/contacts/${person}`)).body.data.client).toEqual({ id: other, name: 'Other Renamed' });
  });

  it('shows a link as { id } only to a key without access to the linked object', async () => {
    const restricted = client(svc, (await ws.key({ name: 'Contacts only', readOnly: true, objects: ['contacts'] })).key);
    const [created] = (await restricted.get(`/api/v1/contacts/${contact}/history`)).body.data;
    expect(created.changes.client).toEqual({ from: null, to: { id: acme } });
  });

  it('pages with limit and offset, and refuses bad paging and unknown parameters with 422', async () => {
    const page = await crm.get(`/api/v1/contacts/${contact}/history?limit=1&offset=1`);
    expect(page.body).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(page.body.data.map((entry: { revision: number }) => entry.revision)).toEqual([1]);
    for (const query of ['limit=0', 'limit=1001', 'offset=-1', 'as_of=x', 'limit=1&limit=2']) {
      const refused = await crm.get(`/api/v1/contacts/${contact}/history?${query}`);
      expect(refused.status, query).toBe(422);
      expect(refused.body.error.status).toBe(422);
    }
  });

  it('answers 404 as GET does for an unknown id, another object and a record of another workspace', async () => {
    const other = await svc.workspace();
    const stranger = client(svc, (await other.key()).key);
    const theirs = (await stranger.post('/api/v1/clients', { name: 'Theirs' })).body.ids[0];
    for (const path of [`/api/v1/clients/${theirs}`, `/api/v1/clients/00000000-0000-4000-8000-000000000000`, `/api/v1/clients/${contact}`]) {
      const history = await crm.get(`${path}/history`);
      const get = await crm.get(path);
      expect(history.status, path).toBe(404);
      expect(history.body).toEqual(get.body);
    }
    expect((await stranger.get(`/api/v1/clients/${theirs}/history`)).status).toBe(200);
  });

  it("shows what a roll-up change moved: an invoice's totals from its lines, by the key whose write set it off", async () => {
    const invoice = (await crm.post('/api/v1/billing', { client: acme, status: 'Sent', taxRate: 10 })).body.ids[0];
    const before = (await crm.get(`/api/v1/billing/${invoice}`)).body.data.subtotal;
    expect(before).toBe(0);
    const line = (await zapier.post('/api/v1/invoiceLines', { invoice, description: 'Seats', quantity: 2, unitPrice: 100 })).body.ids[0];
    expect((await zapier.patch(`/api/v1/invoiceLines/${line}`, { quantity: 3 })).status).toBe(200);
    const entries = (await crm.get(`/api/v1/billing/${invoice}/history`)).body.data;
    const rolled = entries.filter((entry: { rollups?: unknown }) => entry.rollups !== undefined);
    expect(rolled).toHaveLength(2);
    expect(rolled.map((entry: { event: string; changes: object; via: string }) => [entry.event, entry.changes, entry.via])).toEqual([
      ['updated', {}, 'via API · Zapier'],
      ['updated', {}, 'via API · Zapier'],
    ]);
    const [first, second] = rolled.map((entry: { rollups: Record<string, { from: unknown; to: unknown }> }) => entry.rollups);
    // The first change starts from what GET answered before it: the roll-up over no lines.
    expect(first.subtotal).toEqual({ from: before, to: 200 });
    expect(second.subtotal).toEqual({ from: 200, to: 300 });
    // Only what moved: a roll-up that kept its value is not listed.
    for (const moved of Object.values(second) as { from: unknown; to: unknown }[]) expect(moved.from).not.toEqual(moved.to);
    // Entries of the record's own writes carry no rollups.
    expect(entries.filter((entry: { rollups?: unknown }) => entry.rollups === undefined).map((entry: { event: string }) => entry.event)).toEqual(['created']);
  });

  it('needs read access to the object: 403 otherwise, 405 for other methods', async () => {
    const billingOnly = client(svc, (await ws.key({ objects: ['billing'] })).key);
    expect((await billingOnly.get(`/api/v1/contacts/${contact}/history`)).status).toBe(403);
    expect((await crm.post(`/api/v1/contacts/${contact}/history`, {})).status).toBe(405);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService } from '../support/service.js';
import { eventually } from '../support/until.js';

/** Spec section 4: list, upsert, get, patch, delete through HTTP on the embedded store. */

let svc: TestService;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  svc = await startTestService();
  const ws = await svc.workspace();
  api = client(svc, (await ws.key()).key);
});
afterAll(() => svc.stop());

describe('create, read, patch, delete', () => {
  it('creates a record (201 SaveResult) that GET returns at once in the REST format', async () => {
    const created = await api.post('/api/v1/clients', { name: 'Acme', tier: 'Enterprise', arr: 120000, renewalDate: '2030-01-15' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ created: 1, updated: 0, errors: [], ids: [expect.stringMatching(/^[0-9a-f-]{36}$/)] });

    const got = await api.get(`/api/v1/clients/${created.body.ids[0]}`);
    expect(got.status).toBe(200);
    const record = got.body.data;
    expect(record).toMatchObject({ id: created.body.ids[0], name: 'Acme', tier: 'Enterprise', arr: 120000, renewalDate: '2030-01-15' });
    expect(record.clientNumber).toMatch(/^CL-\d{5}$/);
    expect(record.documents).toEqual([]);
    expect(record.industry).toBeNull();
    expect(record.owner).toBeNull();
    expect(record.openBalance).toBe(0);
    expect(typeof record.daysToRenewal).toBe('number');
    expect(record.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(record.updatedAt).toBe(record.createdAt);
    // Every field key of the object is present.
    for (const key of ['clientNumber', 'name', 'industry', 'website', 'tier', 'health', 'arr', 'renewalDate', 'notes', 'owner', 'daysToRenewal', 'documents', 'openBalance', 'healthScore']) {
      expect(record).toHaveProperty(key);
    }
  });

  it('PATCH changes only the fields sent and returns the projected record', async () => {
    const { body } = await api.post('/api/v1/clients', { name: 'Patchable', industry: 'Retail', tier: 'SMB' });
    const id = body.ids[0];
    const before = (await api.get(`/api/v1/clients/${id}`)).body.data;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const patched = await api.patch(`/api/v1/clients/${id}`, { tier: 'Mid-Market', notes: 'upgraded' });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id, name: 'Patchable', industry: 'Retail', tier: 'Mid-Market', notes: 'upgraded' });
    expect(patched.body.data.updatedAt > before.updatedAt).toBe(true);
    expect(patched.body.data.createdAt).toBe(before.createdAt);
    const cleared = await api.patch(`/api/v1/clients/${id}`, { notes: null });
    expect(cleared.body.data.notes).toBeNull();
  });

  it('an id in the path names a record only in the lower case it is stored in', async () => {
    const id = (await api.post('/api/v1/clients', { name: 'Case Co' })).body.ids[0] as string;
    expect((await api.get(`/api/v1/clients/${id}`)).status).toBe(200);
    const upper = await api.get(`/api/v1/clients/${id.toUpperCase()}`);
    expect(upper.status).toBe(404);
    expect(upper.body.error.message).toContain(id.toUpperCase());
  });

  it('DELETE answers { deleted } and the record is gone from get and list', async () => {
    const { body } = await api.post('/api/v1/clients', { name: 'Doomed Ltd' });
    const id = body.ids[0];
    const deleted = await api.delete(`/api/v1/clients/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ deleted: id });
    expect((await api.get(`/api/v1/clients/${id}`)).status).toBe(404);
    expect((await api.get(`/api/v1/clients?name=Doomed%20Ltd`)).body.total).toBe(0);
    expect((await api.delete(`/api/v1/clients/${id}`)).status).toBe(404);
    expect((await api.patch(`/api/v1/clients/${id}`, { notes: 'x' })).status).toBe(404);
  });

  it('works for every default object', async () => {
    const client1 = (await api.post('/api/v1/clients', { name: 'Every Object Co' })).body.ids[0];
    const metric = (await api.post('/api/v1/usageMetrics', { name: 'Logins', aggregation: 'Sum' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Ana', lastName: 'Lima', client: client1 })).body.ids[0];
    const invoice = (await api.post('/api/v1/billing', { client: client1, status: 'Draft' })).body.ids[0];
    const playbook = (await api.post('/api/v1/playbooks', { name: 'Onboard', client: client1, status: 'In progress' })).body.ids[0];
    const template = (await api.post('/api/v1/playbookTemplates', { name: 'T', triggerType: 'Manually' })).body.ids[0];
    const templateStep = (await api.post('/api/v1/templateSteps', { name: 'S1', template })).body.ids[0];
    const writes: [string, Record<string, unknown>][] = [
      ['invoiceLines', { invoice, description: 'Seats', quantity: 2, unitPrice: 10 }],
      ['usage', { client: client1, metric, date: '2024-01-01', value: 5 }],
      ['conversations', { subject: 'Hello', date: '2024-01-01T10:00:00Z', channel: 'Email', contacts: [contact] }],
      ['meetings', { title: 'Kickoff', start: '2024-01-02T09:00:00+02:00', status: 'Scheduled' }],
      ['tasks', { subject: 'Call', status: 'Not started', playbook }],
      ['playbookSteps', { name: 'Step 1', playbook }],
      ['templateTasks', { subject: 'Do it', step: templateStep, template }],
      ['renewals', { name: 'R2025', client: client1, renewalDate: '2025-12-31', stage: 'Upcoming' }],
      ['opportunities', { name: 'Upsell', client: client1, stage: 'Identified' }],
      ['surveys', { type: 'NPS', score: 9, date: '2024-03-01' }],
      ['goals', { name: 'Adoption', client: client1, status: 'On track' }],
    ];
    for (const [object, record] of writes) {
      const saved = await api.post(`/api/v1/${object}`, record);
      expect(saved.status, `${object}: ${JSON.stringify(saved.body)}`).toBe(201);
      const got = await api.get(`/api/v1/${object}/${saved.body.ids[0]}`);
      expect(got.status).toBe(200);
      const list = await api.get(`/api/v1/${object}`);
      expect(list.body.total).toBeGreaterThanOrEqual(1);
    }
  });
});

describe('list', () => {
  it('orders by creation, pages with limit/offset and counts total', async () => {
    const ws = await svc.workspace();
    const own = client(svc, (await ws.key()).key);
    const names = Array.from({ length: 7 }, (_, i) => `Paged ${i}`);
    for (const name of names) await own.post('/api/v1/clients', { name });
    const page = await own.get('/api/v1/clients?limit=3&offset=2');
    expect(page.status).toBe(200);
    expect(page.body.total).toBe(7);
    expect(page.body.limit).toBe(3);
    expect(page.body.offset).toBe(2);
    expect(page.body.data.map((record: any) => record.name)).toEqual(names.slice(2, 5));
    const all = await own.get('/api/v1/clients');
    expect(all.body.limit).toBe(100);
    expect(all.body.data.map((record: any) => record.name)).toEqual(names);
  });

  it('filters exactly and case-insensitively on any field, links by id', async () => {
    const ws = await svc.workspace();
    const own = client(svc, (await ws.key()).key);
    const acme = (await own.post('/api/v1/clients', { name: 'Acme', tier: 'Enterprise', arr: 100 })).body.ids[0];
    await own.post('/api/v1/clients', { name: 'Acme Two', tier: 'SMB', arr: 100.5 });
    await own.post('/api/v1/contacts', [{ firstName: 'A', client: acme }, { firstName: 'B' }]);
    expect((await own.get('/api/v1/clients?tier=enterprise')).body.data.map((r: any) => r.name)).toEqual(['Acme']);
    expect((await own.get('/api/v1/clients?name=ACME')).body.total).toBe(1);
    expect((await own.get('/api/v1/clients?arr=100')).body.total).toBe(1);
    expect((await own.get('/api/v1/clients?arr=100.0')).body.total).toBe(1);
    expect((await own.get(`/api/v1/contacts?client=${acme}`)).body.data.map((r: any) => r.firstName)).toEqual(['A']);
    expect((await own.get('/api/v1/clients?tier=Enterprise&arr=100.5')).body.total).toBe(0);
  });

  it('updated_since is strict', async () => {
    const ws = await svc.workspace();
    const own = client(svc, (await ws.key()).key);
    const first = (await own.post('/api/v1/clients', { name: 'Old' })).body.ids[0];
    // Its health score comes a moment later and moves updatedAt (docs/automation.md): wait for it.
    const old = await eventually(async () => (await own.get(`/api/v1/clients/${first}`)).body.data, (data) => data.healthScore !== null, 20_000, 'the health score');
    expect(old.healthScore).toBe(85);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await own.post('/api/v1/clients', { name: 'New' });
    const since = await own.get(`/api/v1/clients?updated_since=${encodeURIComponent(old.updatedAt)}`);
    expect(since.body.data.map((r: any) => r.name)).toEqual(['New']);
    const before = new Date(Date.parse(old.updatedAt) - 1).toISOString();
    expect((await own.get(`/api/v1/clients?updated_since=${encodeURIComponent(before)}`)).body.total).toBe(2);
  });
});

describe('request ids', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  it('every answer, errors included, carries X-Request-Id: the one sent when it is well formed, else a new one', async () => {
    const anonymous = client(svc, null);
    const answers = [
      await api.get('/api/v1/clients'),
      await api.post('/api/v1/clients', { name: 'Request Id Co' }),
      await api.get('/api/v1/nothing'),
      await anonymous.get('/api/v1/clients'),
      await api.request('PUT', '/api/v1/clients'),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 201, 404, 401, 405]);
    const ids = answers.map((answer) => answer.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);

    for (const sent of ['trace-1.2_3', 'Abc-000']) {
      expect((await api.request('GET', '/api/v1/clients', undefined, { 'X-Request-Id': sent })).headers.get('x-request-id')).toBe(sent);
    }
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const answer = await api.request('GET', '/api/v1/clients', undefined, { 'X-Request-Id': bad });
      expect(answer.headers.get('x-request-id')).toMatch(UUID);
    }
  });
});

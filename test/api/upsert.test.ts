import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService } from '../support/service.js';

/** Spec 4.2 and PRODUCT.md section 3: body forms, matching, per-record failures, status codes, auto numbers. */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

async function freshApi() {
  const ws = await svc.workspace();
  return client(svc, (await ws.key()).key);
}

describe('body forms and status codes', () => {
  it('accepts one record, an array and { records } (201 when all are created)', async () => {
    const api = await freshApi();
    expect((await api.post('/api/v1/clients', { name: 'One' })).body.created).toBe(1);
    const array = await api.post('/api/v1/clients', [{ name: 'Two' }, { name: 'Three' }]);
    expect(array.status).toBe(201);
    expect(array.body.created).toBe(2);
    const wrapped = await api.post('/api/v1/clients', { records: [{ name: 'Four' }] });
    expect(wrapped.status).toBe(201);
    expect((await api.get('/api/v1/clients')).body.total).toBe(4);
  });

  it('answers 200 when some records were updated', async () => {
    const api = await freshApi();
    await api.post('/api/v1/clients', { name: 'Same' });
    const again = await api.post('/api/v1/clients', [{ name: 'same', tier: 'SMB' }, { name: 'Other' }]);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: 1, updated: 1, errors: [] });
    expect((await api.get('/api/v1/clients?name=Same')).body.data[0].tier).toBe('SMB');
  });

  it('answers 207 with indexed errors, leaves failed records out of ids, and saves the rest', async () => {
    const api = await freshApi();
    const result = await api.post('/api/v1/clients', [{ name: 'Good 1' }, { tier: 'Gold' }, { name: 'Good 2' }, { name: 'Bad', arr: 'lots' }]);
    expect(result.status).toBe(207);
    expect(result.body.created).toBe(2);
    expect(result.body.ids).toHaveLength(2);
    expect(result.body.errors.map((error: any) => error.index)).toEqual([1, 3]);
    // A record nothing could match is a create: every problem at once, the missing name too.
    expect(result.body.errors[0].message).toMatch(/^tier: .*; name is required$/);
    // One that could match an existing record (it has a name): only what is wrong with what it sent.
    expect(result.body.errors[1].message).toBe('arr: must be a number, got "lots"');
    const names = (await api.get('/api/v1/clients')).body.data.map((r: any) => r.name);
    expect(names).toEqual(['Good 1', 'Good 2']);
  });

  it('answers 422 with the SaveResult and an error member when every record fails', async () => {
    const api = await freshApi();
    const result = await api.post('/api/v1/clients', [{ tier: 'Enterprise' }, { name: 5 }]);
    expect(result.status).toBe(422);
    expect(result.body).toMatchObject({ error: { status: 422 }, created: 0, updated: 0, ids: [] });
    expect(typeof result.body.error.message).toBe('string');
    expect(result.body.errors).toHaveLength(2);
    expect((await api.get('/api/v1/clients')).body.total).toBe(0);
  });

  it('refuses more than 1000 records and empty requests as a whole', async () => {
    const api = await freshApi();
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ name: `C${i}` }));
    const result = await api.post('/api/v1/clients', tooMany);
    expect(result.status).toBe(422);
    expect(result.body.error.message).toMatch(/1000/);
    expect((await api.post('/api/v1/clients', [])).status).toBe(422);
    expect((await api.get('/api/v1/clients')).body.total).toBe(0);
  });

  it('saves 1000 records in one request, ids in request order', async () => {
    const api = await freshApi();
    const records = Array.from({ length: 1000 }, (_, i) => ({ name: `Bulk ${i}` }));
    const result = await api.post('/api/v1/clients', records);
    expect(result.status).toBe(201);
    expect(result.body.ids).toHaveLength(1000);
    const page = await api.get('/api/v1/clients?limit=1000');
    expect(page.body.total).toBe(1000);
    expect(page.body.data.map((r: any) => r.id)).toEqual(result.body.ids);
  });
});

describe('matching', () => {
  it('updates by id and refuses unknown ids for that record only', async () => {
    const api = await freshApi();
    const id = (await api.post('/api/v1/clients', { name: 'By Id' })).body.ids[0];
    const result = await api.post('/api/v1/clients', [{ id, name: 'Renamed' }, { id: '00000000-0000-4000-8000-000000000000', name: 'X' }]);
    expect(result.status).toBe(207);
    expect(result.body).toMatchObject({ updated: 1, ids: [id] });
    expect((await api.get(`/api/v1/clients/${id}`)).body.data.name).toBe('Renamed');
  });

  it('updates only the fields sent', async () => {
    const api = await freshApi();
    await api.post('/api/v1/clients', { name: 'Keep', industry: 'Retail', arr: 5 });
    await api.post('/api/v1/clients', { name: 'Keep', arr: 6 });
    const record = (await api.get('/api/v1/clients?name=keep')).body.data[0];
    expect(record).toMatchObject({ industry: 'Retail', arr: 6 });
  });

  it('matches on ?match= fields', async () => {
    const api = await freshApi();
    await api.post('/api/v1/contacts', { firstName: 'Ana', lastName: 'Lima', email: 'ana@x.test' });
    const result = await api.post('/api/v1/contacts?match=email', { firstName: 'Anna', email: 'ANA@x.test' });
    expect(result.body).toMatchObject({ updated: 1, created: 0 });
    const contacts = (await api.get('/api/v1/contacts')).body.data;
    expect(contacts).toHaveLength(1);
    expect(contacts[0].firstName).toBe('Anna');
    expect((await api.post('/api/v1/contacts?match=nope', { firstName: 'X' })).status).toBe(422);
    const missing = await api.post('/api/v1/contacts?match=email', { firstName: 'No Email' });
    expect(missing.status).toBe(422);
    expect(missing.body.errors[0].message).toMatch(/email/);
  });

  it('matches by default on unique fields, then the record name; contacts by full name', async () => {
    const api = await freshApi();
    const first = await api.post('/api/v1/clients', { name: 'Numbered' });
    const number = (await api.get(`/api/v1/clients/${first.body.ids[0]}`)).body.data.clientNumber;
    const byNumber = await api.post('/api/v1/clients', { clientNumber: number, name: 'Renumbered' });
    expect(byNumber.body).toMatchObject({ updated: 1, ids: first.body.ids });
    await api.post('/api/v1/contacts', { firstName: 'Ana', lastName: 'Lima' });
    const again = await api.post('/api/v1/contacts', { firstName: 'ana', lastName: 'LIMA', role: 'CFO' });
    expect(again.body.updated).toBe(1);
  });

  it('fails a record whose name matches several records', async () => {
    const api = await freshApi();
    await api.post('/api/v1/clients?match=name,tier', [{ name: 'Twin', tier: 'SMB' }, { name: 'Twin', tier: 'Enterprise' }]);
    const result = await api.post('/api/v1/clients', { name: 'twin', notes: 'which one?' });
    expect(result.status).toBe(422);
    expect(result.body.errors[0].message).toBe('ambiguous match: 2 records');
  });

  it('never matches invoice lines, usage, surveys and conversations by name', async () => {
    const api = await freshApi();
    for (let i = 0; i < 2; i++) await api.post('/api/v1/surveys', { type: 'CSAT', score: 4, date: '2024-01-01' });
    expect((await api.get('/api/v1/surveys')).body.total).toBe(2);
  });

  it('records matching the same new record within one request update it', async () => {
    const api = await freshApi();
    const result = await api.post('/api/v1/clients', [{ name: 'Dup', tier: 'SMB' }, { name: 'DUP', industry: 'Tech' }]);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ created: 1, updated: 1 });
    expect(result.body.ids[0]).toBe(result.body.ids[1]);
    const records = (await api.get('/api/v1/clients')).body.data;
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ tier: 'SMB', industry: 'Tech' });
  });

  it('a 1,000-record body saves in request order: numbers follow the records, and the last record updates the first', async () => {
    const api = await freshApi();
    const body: Record<string, string>[] = Array.from({ length: 1000 }, (_, i) => ({ name: `Many ${i}` }));
    body[999] = { name: 'MANY 0', tier: 'Enterprise' };
    const result = await api.post('/api/v1/clients', body);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ created: 999, updated: 1, errors: [] });
    expect(result.body.ids[999]).toBe(result.body.ids[0]);
    const records = (await api.get('/api/v1/clients?limit=1000')).body;
    expect(records.total).toBe(999);
    const numberOf = new Map(records.data.map((record: any) => [record.id, record.clientNumber]));
    expect(result.body.ids.slice(0, 999).map((id: string) => numberOf.get(id))).toEqual(Array.from({ length: 999 }, (_, i) => `CL-${String(i + 1).padStart(5, '0')}`));
    expect(records.data.find((record: any) => record.id === result.body.ids[0])).toMatchObject({ name: 'MANY 0', tier: 'Enterprise' });
  });
});

describe('auto numbers', () => {
  it('are gap-free per workspace and object under concurrency', async () => {
    const api = await freshApi();
    const requests = Array.from({ length: 10 }, (_, i) =>
      api.post('/api/v1/clients', Array.from({ length: 5 }, (_, j) => ({ name: `Concurrent ${i}-${j}` }))),
    );
    await Promise.all(requests);
    const numbers = (await api.get('/api/v1/clients?limit=1000')).body.data.map((r: any) => r.clientNumber).sort();
    expect(numbers).toEqual(Array.from({ length: 50 }, (_, i) => `CL-${String(i + 1).padStart(5, '0')}`));
    await api.post('/api/v1/billing', { client: 'Concurrent 0-0', status: 'Draft' });
    await api.post('/api/v1/usageMetrics', { name: 'M', aggregation: 'Sum' });
    await api.post('/api/v1/usage', { client: 'Concurrent 0-0', metric: 'M', date: '2024-01-01', value: 1 });
    await api.post('/api/v1/surveys', { type: 'NPS', score: 1, date: '2024-01-01' });
    expect((await api.get('/api/v1/billing')).body.data[0].invoiceNumber).toBe('INV-00001');
    expect((await api.get('/api/v1/usage')).body.data[0].number).toBe('US-00001');
    expect((await api.get('/api/v1/surveys')).body.data[0].number).toBe('SV-00001');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type ApiClient, type TestService } from '../support/service.js';

/**
 * Issue 43 item 2: conditional requests. GET one record answers its ETag (the revision, strong);
 * If-None-Match gives 304; PATCH, DELETE and an upsert by id take If-Match and refuse a record
 * that moved on (412 naming the current ETag), so two clients cannot silently undo each other.
 */

let svc: TestService;
let api: ApiClient;

beforeAll(async () => {
  svc = await startTestService();
  api = await svc.workspaceClient();
});

afterAll(async () => {
  await svc?.stop();
});

const newClient = async (name: string) => (await api.post('/api/v1/clients', { name })).body.ids[0] as string;

describe('conditional requests', () => {
  it('GET one answers a strong ETag, on the fast path too, and 304 for If-None-Match naming it', async () => {
    const id = await newClient('Etag Co');
    const first = await api.get(`/api/v1/clients/${id}`);
    expect(first.status).toBe(200);
    const etag = first.headers.get('ETag')!;
    expect(etag).toMatch(/^"\d+"$/);
    const again = await api.request('GET', `/api/v1/clients/${id}`, undefined, { 'If-None-Match': etag });
    expect(again.status).toBe(304);
    expect(again.body).toBeNull();
    expect(again.headers.get('ETag')).toBe(etag);
    expect((await api.request('GET', `/api/v1/clients/${id}`, undefined, { 'If-None-Match': `"0", W/${etag}` })).status).toBe(304);
    const patched = await api.patch(`/api/v1/clients/${id}`, { notes: 'moved on' });
    expect(patched.headers.get('ETag')).not.toBe(etag);
    const changed = await api.request('GET', `/api/v1/clients/${id}`, undefined, { 'If-None-Match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('ETag')).toBe(patched.headers.get('ETag'));
    expect(changed.body.data.notes).toBe('moved on');
  });

  it('two clients PATCHing with the same If-Match: one wins, the other gets 412 with the current ETag', async () => {
    const id = await newClient('Contested');
    const etag = (await api.get(`/api/v1/clients/${id}`)).headers.get('ETag')!;
    const answers = await Promise.all(['first', 'second'].map((notes) => api.request('PATCH', `/api/v1/clients/${id}`, { notes }, { 'If-Match': etag })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412]);
    const [won, lost] = answers[0]!.status === 200 ? answers : [answers[1]!, answers[0]!];
    const current = won!.headers.get('ETag')!;
    expect(lost!.headers.get('ETag')).toBe(current);
    expect(lost!.body.error.message).toContain(`its current ETag is ${current}`);
    const record = await api.get(`/api/v1/clients/${id}`);
    expect(record.body.data.notes).toBe(won === answers[0] ? 'first' : 'second');
    // With the current ETag the loser's retry goes through.
    expect((await api.request('PATCH', `/api/v1/clients/${id}`, { notes: 'retried' }, { 'If-Match': current })).status).toBe(200);
  });

  it('DELETE with a stale If-Match is 412 and deletes nothing; * or the current ETag deletes', async () => {
    const id = await newClient('Deletable');
    const stale = (await api.get(`/api/v1/clients/${id}`)).headers.get('ETag')!;
    await api.patch(`/api/v1/clients/${id}`, { notes: 'changed' });
    expect((await api.request('DELETE', `/api/v1/clients/${id}`, undefined, { 'If-Match': stale })).status).toBe(412);
    expect((await api.get(`/api/v1/clients/${id}`)).status).toBe(200);
    // A weak ETag never matches strongly.
    const current = (await api.get(`/api/v1/clients/${id}`)).headers.get('ETag')!;
    expect((await api.request('DELETE', `/api/v1/clients/${id}`, undefined, { 'If-Match': `W/${current}` })).status).toBe(412);
    expect((await api.request('DELETE', `/api/v1/clients/${id}`, undefined, { 'If-Match': '*' })).status).toBe(200);
  });

  it('an upsert by id with If-Match: a record that moved on fails alone', async () => {
    const [a, b] = [await newClient('Upsert A'), await newClient('Upsert B')];
    const etagA = (await api.get(`/api/v1/clients/${a}`)).headers.get('ETag')!;
    await api.patch(`/api/v1/clients/${b}`, { notes: 'moved on' });
    // Both records were created with the same revision: the header lists it.
    const answer = await api.post('/api/v1/clients', [{ id: a, notes: 'kept' }, { id: b, notes: 'lost' }, { name: 'No id' }], { 'If-Match': etagA });
    expect(answer.status).toBe(207);
    expect(answer.body.ids).toEqual([a]);
    expect(answer.body.errors).toEqual([
      { index: 1, message: expect.stringMatching(/has changed since the version you sent in If-Match: its current ETag is "\d+"/) },
      { index: 2, message: expect.stringMatching(/If-Match applies to records sent with an id/) },
    ]);
    expect((await api.get(`/api/v1/clients/${b}`)).body.data.notes).toBe('moved on');
  });

  it('refuses an If-Match that names no ETag', async () => {
    const id = await newClient('Malformed');
    const answer = await api.request('PATCH', `/api/v1/clients/${id}`, { notes: 'x' }, { 'If-Match': '3' });
    expect(answer.status).toBe(422);
    expect(answer.body.error.message).toMatch(/If-Match must list ETags as GET answers them/);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type client, startTestService, type TestService } from '../support/service.js';

/**
 * A day that does not exist is a 422 naming the parameter or field, wherever the API takes a
 * date or a moment (issue 39 item 5): `as_of=2026-02-30T10:00:00Z` was read as 2 March.
 */

let svc: TestService;
let api: ReturnType<typeof client>;
let id: string;

beforeAll(async () => {
  svc = await startTestService();
  api = await svc.workspaceClient();
  id = (await api.post('/api/v1/clients', { name: 'Dated' })).body.ids[0];
});

afterAll(async () => {
  await svc?.stop();
});

describe('a day that does not exist', () => {
  it.each([
    ['as_of on one record', () => `/api/v1/clients/${id}?as_of=2026-02-30T10:00:00Z`, /^as_of .*there is no 2026-02-30/],
    ['as_of on a list', () => '/api/v1/clients?as_of=2025-02-29T00:00:00Z', /^as_of .*there is no 2025-02-29/],
    ['updated_since', () => '/api/v1/clients?updated_since=2026-04-31T00:00:00Z', /^updated_since .*there is no 2026-04-31/],
    ['a date filter', () => '/api/v1/renewals?renewalDate=2026-02-30', /renewalDate.*2026-02-30/],
  ])('%s is a 422 naming it', async (_, path, message) => {
    const response = await api.get(path());
    expect(response.status).toBe(422);
    expect(response.body.error.message).toMatch(message);
  });

  it.each([
    ['a date field', 'renewals', { renewalDate: '2026-02-30' }, /renewalDate.*2026-02-30/],
    ['a date-time field', 'meetings', { start: '2026-02-30T10:00:00Z' }, /start.*2026-02-30T10:00:00Z/],
  ])('%s is a 422 naming it, and nothing is written', async (_, object, body, message) => {
    const before = (await api.get(`/api/v1/${object}`)).body.total;
    const response = await api.post(`/api/v1/${object}`, body);
    expect(response.status).toBe(422);
    expect(response.body.error.message).toMatch(message);
    expect((await api.get(`/api/v1/${object}`)).body.total).toBe(before);
  });
});

import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type ApiClient, type TestService } from '../support/service.js';

/**
 * Bad input of every shape at every endpoint: always a 4xx Error body, never a 5xx, never a
 * partial write (spec 7, PRODUCT.md section 4).
 */

let svc: TestService;
let api: ApiClient;
let existing: string;

beforeAll(async () => {
  svc = await startTestService();
  api = await svc.workspaceClient();
  existing = (await api.post('/api/v1/clients', { name: 'Existing' })).body.ids[0];
});
afterAll(() => svc.stop());

function expectErrorBody(response: { status: number; body: any }, status: number) {
  expect(response.status).toBe(status);
  expect(response.body).toMatchObject({ error: { status, message: expect.any(String) } });
}

const garbageBodies: [string, string][] = [
  ['malformed JSON', '{"name": "x",'],
  ['a bare string', '"hello"'],
  ['a number', '42'],
  ['null', 'null'],
  ['true', 'true'],
  ['empty', ''],
  ['2000-deep arrays', '['.repeat(2000) + ']'.repeat(2000)],
  ['2000-deep objects', '{"a":'.repeat(2000) + '1' + '}'.repeat(2000)],
  ['100k-deep arrays', '['.repeat(100_000) + ']'.repeat(100_000)],
  ['__proto__ key', '{"name":"P","__proto__":{"admin":true}}'],
  ['constructor key', '{"name":"P","constructor":{"prototype":{"x":1}}}'],
  ['unknown key', '{"name":"P","colour":"red"}'],
  ['non-finite number', '{"name":"P","arr":1e999}'],
  ['wrong type', '{"name":["P"]}'],
  ['nested record', '{"name":{"first":"P"}}'],
  ['id set in body of a record with bad id', '{"id":"not-a-uuid","name":"P"}'],
  ['createdAt', '{"name":"P","createdAt":"2024-01-01T00:00:00Z"}'],
  ['calculated field', '{"name":"P","openBalance":5}'],
  ['files field', '{"name":"P","documents":[]}'],
  ['wrapped records not an array', '{"records":{"name":"P"}}'],
  ['array of garbage', '[1, "x", null, [], true]'],
];

describe('POST /api/v1/{object}', () => {
  it.each(garbageBodies)('%s -> 4xx Error body, nothing written', async (_, raw) => {
    const response = await api.post('/api/v1/clients', raw);
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(response.body.error).toMatchObject({ status: response.status, message: expect.any(String) });
    expect((await api.get('/api/v1/clients')).body.total).toBe(1);
  });

  it('a body over the documented limit is 413', async () => {
    const huge = JSON.stringify({ name: 'Big', notes: 'x'.repeat(10 * 1024 * 1024) });
    expectErrorBody(await api.post('/api/v1/clients', huge), 413);
    expect((await api.get('/api/v1/clients')).body.total).toBe(1);
  });

  it('a body over the limit sent without Content-Length (chunked) is 413 too', async () => {
    const key = (await (await svc.workspace()).key()).key;
    const chunk = new TextEncoder().encode(`{"name":"Big","notes":"${'x'.repeat(1024 * 1024)}`);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 7) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await fetch(`${svc.url}/api/v1/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expectErrorBody({ status: response.status, body: await response.json() }, 413);
  });

  it('messages name the field, the problem and the allowed values', async () => {
    const response = await api.post('/api/v1/clients', { name: 'X', tier: 'Gold' });
    expect(response.body.errors[0].message).toMatch(/tier/);
    expect(response.body.errors[0].message).toMatch(/Enterprise, Mid-Market, SMB/);
    const unknown = await api.post('/api/v1/clients', { name: 'X', colour: 'red' });
    expect(unknown.body.errors[0].message).toMatch(/colour/);
  });

  it('date and date-time fields must be real', async () => {
    for (const renewalDate of ['2024-02-30', '2024-13-01', '01/02/2024', '2024-1-1', 20240101]) {
      expect((await api.post('/api/v1/clients', { name: 'D', renewalDate })).status).toBe(422);
    }
    expect((await api.post('/api/v1/meetings', { title: 'M', status: 'Scheduled', start: 'tomorrow' })).status).toBe(422);
  });

  it('unknown query parameters are 422', async () => {
    expectErrorBody(await api.post('/api/v1/clients?foo=bar', { name: 'Q' }), 422);
  });

  // Spec 4.3-4.5 take no query parameters (GET one takes as_of): one sent in the hope of a
  // partial answer or a conditional delete is refused, not silently ignored.
  it.each([
    ['GET', '?fields=name', "unknown query parameter 'fields' (only as_of)"],
    ['PATCH', '?dry_run=true', "unknown query parameter 'dry_run' (this request takes none)"],
    ['DELETE', '?force=true', "unknown query parameter 'force' (this request takes none)"],
  ])('%s one record with %s is 422 and changes nothing', async (method, query, message) => {
    const id = (await api.post('/api/v1/clients', { name: `Query ${method}` })).body.ids[0];
    const response = await api.request(method, `/api/v1/clients/${id}${query}`, method === 'PATCH' ? { tier: 'SMB' } : undefined);
    expectErrorBody(response, 422);
    expect(response.body.error.message).toBe(message);
    expect((await api.get(`/api/v1/clients/${id}`)).body.data).toMatchObject({ name: `Query ${method}`, tier: null });
  });
});

describe('PATCH /api/v1/{object}/{id}', () => {
  it.each(garbageBodies)('%s -> 4xx Error body, record unchanged', async (_, raw) => {
    const response = await api.request('PATCH', `/api/v1/clients/${existing}`, raw);
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(response.body.error).toMatchObject({ status: response.status, message: expect.any(String) });
    expect((await api.get(`/api/v1/clients/${existing}`)).body.data.name).toBe('Existing');
  });

  it('an array body, setting id or clearing a required field is 422', async () => {
    expectErrorBody(await api.patch(`/api/v1/clients/${existing}`, [{ name: 'A' }]), 422);
    expectErrorBody(await api.patch(`/api/v1/clients/${existing}`, { id: existing }), 422);
    expectErrorBody(await api.patch(`/api/v1/clients/${existing}`, { name: null }), 422);
    expectErrorBody(await api.patch(`/api/v1/clients/${existing}`, { name: '' }), 422);
  });
});

describe('GET list filters', () => {
  const hostile = ["' OR 1=1 --", '"; DROP TABLE records; --', '{"$ne": null}', '.*', '%', '_', '\\', '\u0000', '$where', 'a'.repeat(10_000)];
  it.each(hostile)('filter value %j is a plain, harmless value', async (value) => {
    const response = await api.get(`/api/v1/clients?name=${encodeURIComponent(value)}`);
    expect(response.status).toBe(200);
    expect(response.body.total).toBe(0);
  });

  it.each([
    ['limit=0'], ['limit=1001'], ['limit=-1'], ['limit=abc'], ['limit=1.5'], ['offset=-1'], ['offset=x'],
    ['updated_since=yesterday'], ['updated_since=2024-13-45T00:00:00Z'], ['colour=red'], ['daysToRenewal=3'], ['documents=x'],
    ['arr=lots'], ['limit=1&limit=2'],
  ])('%s -> 422', async (query) => {
    expectErrorBody(await api.get(`/api/v1/clients?${query}`), 422);
  });

  it.each([
    ['/api/v1/clients?offset=-1', 'offset must be a whole number, 0 or more, got "-1"'],
    ['/api/v1/clients?offset=99999999999999999999', 'offset must be a whole number, 0 or more, got "99999999999999999999"'],
    ['/api/v1/clients?limit=0', 'limit must be a whole number from 1 to 1000, got "0"'],
    [`/api/v1/clients/EXISTING/history?offset=x`, 'offset must be a whole number, 0 or more, got "x"'],
  ])('%s says which numbers it takes', async (path, message) => {
    const response = await api.get(path.replace('EXISTING', existing));
    expectErrorBody(response, 422);
    expect(response.body.error.message).toBe(message);
  });
});

describe('requests the HTTP parser refuses', () => {
  it('a URL or headers over the server limit is 431 with an Error body', async () => {
    const response = await fetch(`${svc.url}/api/v1/clients?name=${'a'.repeat(20_000)}`);
    expect(response.status).toBe(431);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ error: { status: 431, message: expect.stringMatching(/^the request's URL and headers are larger than/) } });
  });

  it('an oversized request on a connection that already answered one (keep-alive) gets its 431 too', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(svc.url).port), '127.0.0.1', () => socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => {
        const first = text === '';
        text += chunk;
        if (first) socket.write(`GET /api/v1/clients?name=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('\r\n\r\n{"status":"live"}HTTP/1.1 431 Request Header Fields Too Large\r\n');
  });

  it('a request that is not HTTP is 400 with an Error body', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(svc.url).port), '127.0.0.1', () => socket.end('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toMatch(/\r\nContent-Type: application\/json\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ error: { status: 400, message: expect.stringMatching(/^the request is not valid HTTP/) } });
  });
});

describe('paths and methods', () => {
  it('unknown objects and records are 404', async () => {
    expectErrorBody(await api.get('/api/v1/unicorns'), 404);
    expectErrorBody(await api.post('/api/v1/unicorns', { name: 'x' }), 404);
    expectErrorBody(await api.get('/api/v1/clients/00000000-0000-4000-8000-000000000000'), 404);
    expectErrorBody(await api.get('/api/v1/clients/not-a-uuid'), 404);
    expectErrorBody(await api.delete('/api/v1/clients/../../etc/passwd'), 404);
    expectErrorBody(await api.get('/api/v1/__proto__'), 404);
    expectErrorBody(await api.get('/api/v1/constructor'), 404);
    expectErrorBody(await api.get('/nowhere'), 404);
  });

  it.each([
    ['PUT', '/api/v1/clients'], ['PATCH', '/api/v1/clients'], ['DELETE', '/api/v1/clients'],
    ['PUT', '/api/v1/clients/ID'], ['POST', '/api/v1/clients/ID'],
  ])('%s %s -> 405', async (method, path) => {
    const response = await api.request(method, path.replace('ID', existing), method === 'DELETE' ? undefined : '{}');
    expectErrorBody(response, 405);
    expect((await api.get(`/api/v1/clients/${existing}`)).status).toBe(200);
  });

  // Any other method on a path that exists is a 405 naming the allowed ones, never 'no such path'.
  it.each([
    ['OPTIONS', '/api/v1/clients', 'GET, POST'],
    ['OPTIONS', '/api/v1/clients/ID', 'GET, PATCH, DELETE'],
    ['OPTIONS', '/api/v1/clients/ID/history', 'GET'],
    ['POST', '/health/live', 'GET'],
    ['DELETE', '/health/ready', 'GET'],
  ])('%s %s -> 405, Allow: %s', async (method, path, allowed) => {
    const response = await api.request(method, path.replace('ID', existing));
    expectErrorBody(response, 405);
    expect(response.headers.get('allow')).toBe(allowed);
  });
});

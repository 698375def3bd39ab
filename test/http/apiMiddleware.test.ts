import type { MiddlewareHandler } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandDeps } from '../../commands/deps.js';
import { createApp } from '../../src/http/app.js';
import type { AppEnv } from '../../src/http/types.js';
import { Catalogues } from '../../src/setup/catalogues.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * GET one record is answered by an app of its own that bypasses the main router
 * (src/http/oneRecordRoute.ts). A middleware added to the /api routes (ApiDeps.apiMiddleware)
 * runs on that path too, after authentication, exactly as on every other route.
 */

let svc: TestService;
let catalogues: Catalogues;
let key: string;
let id: string;
const seen: string[] = [];

const marking: MiddlewareHandler<AppEnv> = async (c, next) => {
  seen.push(`${c.req.method} ${c.req.path} by ${c.get('caller') ? 'a caller' : 'nobody'}`);
  await next();
  c.header('X-Marked', 'yes');
};

beforeAll(async () => {
  svc = await startTestService();
  const workspace = await svc.workspace();
  key = (await workspace.key()).key;
  const created = await svc.service.app!.request('/api/v1/clients', {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'Marked Co' }),
  });
  id = ((await created.json()) as { ids: string[] }).ids[0]!;
  catalogues = new Catalogues(svc.service.backends.events);
  await catalogues.watch();
});
afterAll(async () => {
  await catalogues.close();
  await svc.stop();
});

function appWith(apiMiddleware: MiddlewareHandler<AppEnv>[]) {
  const { readStore, setup, idempotency } = svc.service.backends;
  // Only reads are sent here: the write side is never reached.
  return createApp({ commands: {} as CommandDeps, readStore, setup, idempotency, catalogues, logger: pino({ level: 'silent' }), clock: () => new Date(), apiMiddleware });
}

describe('a middleware of the /api routes', () => {
  it('runs on the one-record GET path and on the main router alike, after authentication', async () => {
    const app = appWith([marking]);
    const headers = { Authorization: `Bearer ${key}` };
    const one = await app.request(`/api/v1/clients/${id}`, { headers });
    const list = await app.request('/api/v1/clients?limit=1', { headers });
    expect([one.status, list.status]).toEqual([200, 200]);
    expect([one.headers.get('x-marked'), list.headers.get('x-marked')]).toEqual(['yes', 'yes']);
    expect(((await one.json()) as { data: { name: string } }).data.name).toBe('Marked Co');
    expect(seen).toEqual([`GET /api/v1/clients/${id} by a caller`, 'GET /api/v1/clients by a caller']);
  });

  it('answers with what a middleware returns instead of the route, on both paths', async () => {
    const app = appWith([async (c) => c.json({ error: { status: 503, message: 'closed for the test' } }, 503)]);
    const headers = { Authorization: `Bearer ${key}` };
    const one = await app.request(`/api/v1/clients/${id}`, { headers });
    const list = await app.request('/api/v1/clients', { headers });
    expect([one.status, list.status]).toEqual([503, 503]);
    expect(await one.json()).toEqual({ error: { status: 503, message: 'closed for the test' } });
  });

  it('is not reached by a request that fails authentication, on either path', async () => {
    seen.length = 0;
    const app = appWith([marking]);
    const one = await app.request(`/api/v1/clients/${id}`, { headers: { Authorization: 'Bearer csr_wrong' } });
    expect(one.status).toBe(401);
    expect(seen).toEqual([]);
  });
});

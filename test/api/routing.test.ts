import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

/** The API's routing: one precompiled RegExpRouter, with the OpenAPI document beside the object routes. */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

describe('routing', () => {
  it('matches with the RegExpRouter, not a fallback', () => {
    expect(svc.service.app!.router.name).toBe('RegExpRouter');
  });

  it('serves the OpenAPI document, the object routes beside it and 404 for an unknown object', async () => {
    const api = await svc.workspaceClient();
    expect((await api.get('/api/v1/openapi.json')).body.openapi).toMatch(/^3\./);
    expect((await api.get('/api/v1/clients')).status).toBe(200);
    const unknown = await api.get('/api/v1/nosuch');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: { status: 404, message: "unknown object 'nosuch'" } });
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const other = await api.request(method, '/api/v1/openapi.json', method === 'DELETE' ? undefined : {});
      expect([method, other.status, other.headers.get('allow'), other.body]).toEqual([method, 405, 'GET', { error: { status: 405, message: `${method} is not allowed on this path (allowed: GET)` } }]);
    }
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/service.js';
import { fingerprint, generateApiKey } from '../../src/setup/apiKeys.js';

/** The `request` line at info: request id, workspace and key of the caller, route and status. */

const lines: Record<string, unknown>[] = [];
let service: RunningService;
let dataDir: string;
const workspaceId = randomUUID();
const keyId = randomUUID();
const key = generateApiKey();

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'csr-test-'));
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  service = await startService(loadConfig({ DATA_DIR: dataDir, PORT: '0' }), logger);
  const setup = service.backends.setup;
  await setup.createWorkspace({ id: workspaceId, slug: 'logged', name: 'logged', createdAt: new Date().toISOString() });
  await setup.createKey({
    id: keyId, workspaceId, name: 'k', fingerprint: fingerprint(key), access: 'read-write', objects: 'all',
    createdAt: new Date().toISOString(), lastUsedAt: null, revokedAt: null,
  });
});
afterAll(async () => {
  await service.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const requestLine = (requestId: string) => lines.find((line) => line['msg'] === 'request' && line['requestId'] === requestId);

describe('request log', () => {
  it('logs every request with its id, and the workspace and key once authenticated, request after request', async () => {
    for (let i = 0; i < 3; i++) {
      const sent = `log-test-${i}`;
      const answer = await fetch(`${service.url}/api/v1/clients?limit=1`, { headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': sent } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-request-id')).toBe(sent);
      await answer.text();
      await expect.poll(() => requestLine(sent)).toMatchObject({ level: 30, requestId: sent, workspace: workspaceId, keyId, method: 'GET', path: '/api/v1/clients', status: 200 });
    }
  });

  it('logs a refused request with its id and no key', async () => {
    const answer = await fetch(`${service.url}/api/v1/clients`, { headers: { Authorization: 'Bearer csr_wrong', 'X-Request-Id': 'log-test-401' } });
    expect(answer.status).toBe(401);
    await answer.text();
    await expect.poll(() => requestLine('log-test-401')).toMatchObject({ requestId: 'log-test-401', status: 401 });
    expect(requestLine('log-test-401')).not.toHaveProperty('keyId');
  });

  // GET one record is answered by its own one-route app (src/http/oneRecordRoute.ts): the same
  // request id, log line and error answers as every other route.
  it('logs GET one record with its id, workspace and key, and answers its errors as every route does', async () => {
    const created = await fetch(`${service.url}/api/v1/clients`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Logged Co' }),
    });
    const id = ((await created.json()) as { ids: string[] }).ids[0]!;

    const found = await fetch(`${service.url}/api/v1/clients/${id}`, { headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': 'log-one-200' } });
    expect(found.status).toBe(200);
    expect(found.headers.get('x-request-id')).toBe('log-one-200');
    expect(((await found.json()) as { data: { name: string } }).data.name).toBe('Logged Co');
    await expect.poll(() => requestLine('log-one-200')).toMatchObject({ workspace: workspaceId, keyId, method: 'GET', path: `/api/v1/clients/${id}`, status: 200 });

    const generated = await fetch(`${service.url}/api/v1/clients/${id}`, { headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': 'not valid!' } });
    const generatedId = generated.headers.get('x-request-id')!;
    expect(generatedId).toMatch(/^[0-9a-f-]{36}$/);
    await generated.text();
    await expect.poll(() => requestLine(generatedId)).toMatchObject({ status: 200 });

    const refused = await fetch(`${service.url}/api/v1/clients/${id}`, { headers: { Authorization: 'Bearer csr_wrong', 'X-Request-Id': 'log-one-401' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect(refused.headers.get('x-request-id')).toBe('log-one-401');
    expect(await refused.json()).toEqual({ error: { status: 401, message: 'invalid or revoked API key' } });
    await expect.poll(() => requestLine('log-one-401')).toMatchObject({ status: 401 });
    expect(requestLine('log-one-401')).not.toHaveProperty('keyId');

    const missing = await fetch(`${service.url}/api/v1/clients/${randomUUID()}`, { headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': 'log-one-404' } });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { status: number } }).error.status).toBe(404);
    await expect.poll(() => requestLine('log-one-404')).toMatchObject({ keyId, status: 404 });

    const head = await fetch(`${service.url}/api/v1/clients/${id}`, { method: 'HEAD', headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': 'log-one-head' } });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-request-id')).toBe('log-one-head');
  });
});

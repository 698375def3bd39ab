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
});

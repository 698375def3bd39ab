import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { startReceiver, RECEIVER_CA_FILE, type Receiver } from '../support/receiver.js';
import { client } from '../support/service.js';

/**
 * The webhook fan-out's subscription group starts at the end of the log when it is created, so
 * it must exist before the first webhook does: else a change made between the webhook's creation
 * and the dispatcher's first start (API processes up before the dispatcher, as in
 * docker-compose.yml, or a busy machine starting its threads late) is never sent.
 */

const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE };
const dataDir = mkdtempSync(join(tmpdir(), 'csr-first-webhook-'));
const csr = csrTool(dataDir, ENV);
let receiver: Receiver;
let server: ServerProcess | undefined;

beforeAll(async () => {
  receiver = await startReceiver();
});

afterAll(async () => {
  await server?.kill();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('a change made before any dispatcher ever ran reaches a webhook created before it', async () => {
  const slug = `first-${Date.now()}`;
  await csr.json('workspaces', 'create', slug);
  const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'Zapier');
  // A fresh store served by an API (and projector) without the dispatcher role.
  server = await spawnServer({ DATA_DIR: dataDir, ROLES: 'api,projector', ...ENV });
  await csr.json('webhooks', 'create', '--workspace', slug, '--name', 'CRM', '--url', `${receiver.origin}/crm`);
  expect((await client(server.url, key).post('/api/v1/clients', { name: 'Early' })).status).toBe(201);
  await server.kill();

  server = await spawnServer({ DATA_DIR: dataDir, ...ENV });
  const requests = await receiver.waitFor('/crm', (all) => all.length >= 1, 60_000);
  expect(requests.map((request) => request.body.data.name)).toEqual(['Early']);
  // Two servers and three csr commands, each a process of its own: a busy machine takes minutes.
}, 180_000);

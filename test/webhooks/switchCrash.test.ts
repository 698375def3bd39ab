import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhook } from '../../src/webhooks/signature.js';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { startReceiver, RECEIVER_CA_FILE, type Receiver } from '../support/receiver.js';
import { client } from '../support/service.js';

/**
 * Issue 22 item 4: on/off is decided by log order, whenever the fan-out runs. The fan-out is made
 * to lag (a server without the dispatcher role, killed with SIGKILL), the webhook is switched back
 * on before it catches up, and the changes made while it was off must still never be sent.
 */

const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE, WEBHOOK_RETRY_DELAYS: '200ms,200ms,200ms,200ms,200ms' };
const dataDir = mkdtempSync(join(tmpdir(), 'csr-switch-crash-'));
const csr = csrTool(dataDir, ENV);
let receiver: Receiver;
let server: ServerProcess | undefined;
let slug: string;
let key: string;

beforeAll(async () => {
  receiver = await startReceiver();
  slug = `crash-${Date.now()}`;
  await csr.json('workspaces', 'create', slug);
  ({ key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'Zapier'));
});

afterAll(async () => {
  await server?.kill();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const createClient = async (name: string) => {
  const created = await client(server!.url, key).post('/api/v1/clients', { name });
  expect(created.status).toBe(201);
};

describe('switching a webhook off survives kill -9 and a switch back on (issue 22 item 4)', () => {
  it('changes made while off are never sent, even when the fan-out first sees them after the webhook is on again', async () => {
    // 1. A full server: the consumer group exists and the webhook receives.
    server = await spawnServer({ DATA_DIR: dataDir, ...ENV });
    const hook = await csr.json<{ id: string; secret: string }>('webhooks', 'create', '--workspace', slug, '--name', 'CRM', '--url', `${receiver.origin}/crm`);
    await createClient('Before');
    await receiver.waitFor('/crm', (requests) => requests.length === 1, 60_000);
    await server.kill('SIGKILL');

    // 2. Off, then changes while off, on a server whose fan-out does not run; killed again.
    await csr.json('webhooks', 'off', hook.id);
    server = await spawnServer({ DATA_DIR: dataDir, ROLES: 'api,projector', ...ENV });
    for (const name of ['While off 1', 'While off 2', 'While off 3']) await createClient(name);
    await server.kill('SIGKILL');

    // 3. On again, and the secret rotated, before any fan-out has seen those changes.
    await csr.json('webhooks', 'on', hook.id);
    const { secret } = await csr.json<{ secret: string }>('webhooks', 'rotate-secret', hook.id);

    // 4. The fan-out catches up: only the change made after switching on is sent.
    server = await spawnServer({ DATA_DIR: dataDir, ...ENV });
    await createClient('After');
    const requests = await receiver.waitFor('/crm', (all) => all.some((request) => request.body?.data?.name === 'After'), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const names = receiver.received('/crm').map((request) => request.body.data.name);
    expect(names).toEqual(['Before', 'After']);
    // The rule for secrets: a delivery is signed with the secret current when it is sent.
    const after = requests.find((request) => request.body.data.name === 'After')!;
    expect(checkWebhook(after.rawBody, after.headers, secret).ok).toBe(true);
    expect(checkWebhook(after.rawBody, after.headers, hook.secret).ok).toBe(false);
    // Three servers and five csr commands, each a process of its own: a busy machine takes minutes.
  }, 240_000);
});

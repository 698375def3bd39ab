import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhook } from '../../src/webhooks/signature.js';
import { csrTool } from '../support/cli.js';
import { startCliServer, type CliServer } from '../support/cliServer.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { RECEIVER_CA_FILE, type Receiver } from '../support/receiver.js';
import { client } from '../support/service.js';

/**
 * `csr webhooks ...` (PRODUCT.md section 2) run as an operator runs it, against the data
 * directory of a server running in its own process, with a real HTTPS receiver.
 */

/**
 * Retries every 300 ms, a hundred of them: the kill -9 test needs its deliveries still waiting for
 * a retry when it kills the server, however long the 15 writes before it take (with five, the first
 * delivery failed for good after 1.5 s, which a slow machine's writes outlast).
 */
const RETRY_DELAYS = Array.from({ length: 100 }, () => '300ms').join(',');
const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE, WEBHOOK_RETRY_DELAYS: RETRY_DELAYS };
const dataDir = mkdtempSync(join(tmpdir(), 'csr-cli-webhooks-'));
const csr = csrTool(dataDir, ENV);
let receiver: Receiver;
let server: ServerProcess;
let slug: string;
let api: ReturnType<typeof client>;

interface Created {
  id: string;
  name: string;
  url: string;
  events: unknown;
  objects: unknown;
  enabled: boolean;
  secret: string;
}

let harness: CliServer;

beforeAll(async () => {
  harness = await startCliServer(csr, dataDir, ENV, 'Zapier');
  ({ receiver, server, slug, api } = harness);
});

afterAll(async () => {
  await server?.kill(); // the one a test restarted, if it did
  await harness?.close();
});

describe('csr webhooks', () => {
  it('create shows the secret once; list never shows it; the running server sends to the new webhook', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'CRM', '--url', `${receiver.origin}/crm`);
    expect(Object.keys(created)).toEqual(['id', 'name', 'url', 'events', 'objects', 'enabled', 'secret']);
    expect(created).toMatchObject({ name: 'CRM', url: `${receiver.origin}/crm`, events: 'all', objects: 'all', enabled: true });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const listed = await csr.json<unknown[]>('webhooks', 'list', '--workspace', slug);
    expect(listed).toEqual([{ id: created.id, name: 'CRM', url: `${receiver.origin}/crm`, events: 'all', objects: 'all', enabled: true, disabledReason: null, disabledAt: null }]);
    expect(JSON.stringify(listed)).not.toContain(created.secret);

    expect((await api.post('/api/v1/clients', { name: 'Acme' })).status).toBe(201);
    const [request] = await receiver.waitFor('/crm', (requests) => requests.length === 1);
    expect(checkWebhook(request!.rawBody, request!.headers, created.secret).ok).toBe(true);
  });

  it('create with chosen events and objects; refused addresses, unknown objects and kinds fail with exit 1', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Deletes', '--url', `${receiver.origin}/deletes`, '--events', 'deleted', '--objects', 'clients,billing');
    expect(created).toMatchObject({ events: ['deleted'], objects: ['clients', 'billing'] });
    expect(await csr.fails(1, 'webhooks', 'create', '--workspace', slug, '--name', 'x', '--url', 'http://example.com/')).toMatch(/only https:\/\//);
    expect(await csr.fails(1, 'webhooks', 'create', '--workspace', slug, '--name', 'x', '--url', `${receiver.origin}/`, '--objects', 'nope')).toMatch(/unknown object "nope"/);
    expect(await csr.fails(1, 'webhooks', 'create', '--workspace', slug, '--name', 'x', '--url', `${receiver.origin}/`, '--events', 'archived')).toMatch(/events must be/);
    expect(await csr.fails(1, 'webhooks', 'create', '--workspace', 'no-such-ws', '--name', 'x', '--url', `${receiver.origin}/`)).toMatch(/workspace "no-such-ws" not found/);
    expect(await csr.fails(2, 'webhooks', 'create', '--workspace', slug, '--name', 'x')).toMatch(/missing option --url/);
    // An update that names nothing to change is a usage error, not a silent exit 0.
    expect(await csr.fails(2, 'webhooks', 'update', created.id)).toMatch(/nothing to change: give --name, --url, --events or --objects/);
  });

  it('test sends webhook.test at once and prints its delivery; deliveries lists it', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Tested', '--url', `${receiver.origin}/tested`);
    const delivery = await csr.json<Record<string, unknown>>('webhooks', 'test', created.id);
    expect(Object.keys(delivery)).toEqual(['id', 'eventId', 'event', 'status', 'responseCode', 'attempts', 'error', 'createdAt', 'lastAttemptAt', 'nextAttemptAt', 'cause', 'originalId']);
    expect(delivery).toMatchObject({ event: 'webhook.test', status: 'delivered', responseCode: 204, attempts: 1, error: null, nextAttemptAt: null });
    expect(receiver.received('/tested')[0]!.body).toMatchObject({ event: 'webhook.test', object: null, source: 'app', data: { webhook: { id: created.id, name: 'Tested' } } });
    expect(await csr.json('webhooks', 'deliveries', created.id)).toEqual([delivery]);
  });

  it('delete removes a webhook: gone from the list, nothing more sent to it, an unknown id fails', async () => {
    const kept = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Kept', '--url', `${receiver.origin}/kept`, '--objects', 'goals');
    const gone = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Gone', '--url', `${receiver.origin}/gone`, '--objects', 'goals');
    expect(await csr.json('webhooks', 'delete', gone.id)).toEqual({ id: gone.id, deleted: true });
    const listed = await csr.json<{ id: string }[]>('webhooks', 'list', '--workspace', slug);
    expect(listed.map((webhook) => webhook.id)).toContain(kept.id);
    expect(listed.map((webhook) => webhook.id)).not.toContain(gone.id);
    await api.post('/api/v1/clients', { name: 'Deleted Hooks Inc' });
    expect((await api.post('/api/v1/goals', { name: 'After the deletion', client: 'Deleted Hooks Inc', status: 'On track' })).status).toBe(201);
    await receiver.waitFor('/kept', (requests) => requests.length === 1);
    expect(receiver.received('/gone')).toEqual([]);
    expect(await csr.fails(1, 'webhooks', 'delete', gone.id)).toBe(`csr: webhook ${gone.id} not found\n`);
  });

  it('test exits 1 and still prints the delivery when the receiver refuses it', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Refused', '--url', `${receiver.origin}/refused`);
    receiver.on('/refused', 500);
    const result = await csr.run('webhooks', 'test', created.id, '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ event: 'webhook.test', status: 'retrying', responseCode: 500, attempts: 1 });
  });

  it('test of a webhook that is off: a refused test is failed for good, never shown as waiting for a retry that cannot come', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Off and refused', '--url', `${receiver.origin}/off-refused`);
    receiver.on('/off-refused', 500);
    await csr.json('webhooks', 'off', created.id);
    const result = await csr.run('webhooks', 'test', created.id, '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ event: 'webhook.test', status: 'failed', responseCode: 500, attempts: 1, nextAttemptAt: null });
    expect(receiver.received('/off-refused')).toHaveLength(1);
  });

  it('off skips and stops sending; on resumes; rotate-secret makes the old secret useless at once', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Switch', '--url', `${receiver.origin}/switch`, '--objects', 'tasks');
    const off = await csr.json<Record<string, unknown>>('webhooks', 'off', created.id);
    expect(off).toMatchObject({ id: created.id, enabled: false, disabledReason: 'switched off by an administrator' });
    expect(off).not.toHaveProperty('secret');
    await api.post('/api/v1/tasks', { subject: 'While off', status: 'Done' });
    expect(await csr.json('webhooks', 'on', created.id)).toMatchObject({ enabled: true, disabledReason: null });

    const rotated = await csr.json<{ id: string; secret: string }>('webhooks', 'rotate-secret', created.id);
    expect(rotated.id).toBe(created.id);
    expect(rotated.secret).not.toBe(created.secret);
    await api.post('/api/v1/tasks', { subject: 'After rotation', status: 'Done' });
    const [request] = await receiver.waitFor('/switch', (requests) => requests.length === 1);
    expect(request!.body.data.subject).toBe('After rotation');
    expect(checkWebhook(request!.rawBody, request!.headers, rotated.secret).ok).toBe(true);
    expect(checkWebhook(request!.rawBody, request!.headers, created.secret).ok).toBe(false);
  });

  it('unknown webhook ids fail with exit 1', async () => {
    for (const command of ['on', 'off', 'rotate-secret', 'test', 'deliveries']) {
      expect(await csr.fails(1, 'webhooks', command, '00000000-0000-4000-8000-000000000000')).toMatch(/webhook 00000000-0000-4000-8000-000000000000 not found/);
    }
  });

  it('replay-parked hands parked webhook events back to the running dispatcher and says how many', async () => {
    expect(await csr.json('webhooks', 'replay-parked')).toEqual({ replayed: 0 });
    const text = await csr.run('webhooks', 'replay-parked');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/replayed/);
  });

  it('the secret is never written to the server log', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Logged', '--url', `${receiver.origin}/logged`);
    await api.post('/api/v1/clients', { name: 'Logged Inc' });
    await receiver.waitFor('/logged', (requests) => requests.length === 1);
    expect(server.output()).not.toContain(created.secret);
    expect(server.output()).toContain('"msg":"started: API on');
  });
});

describe('nothing lost: kill -9 while deliveries wait for retries', () => {
  it('after a restart, due retries go out, every change arrives, none twice once delivered', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Crashy', '--url', `${receiver.origin}/crashy`, '--objects', 'contacts');
    let healthy = false;
    receiver.on('/crashy', () => (healthy ? 200 : 503));
    const ids: string[] = [];
    for (let i = 0; i < 15; i++) ids.push((await api.post('/api/v1/contacts', { firstName: 'Crash', lastName: `${i}` })).body.ids[0]);
    await receiver.waitFor('/crashy', (requests) => new Set(requests.map((request) => request.body.data.id)).size === 15);

    await server.kill('SIGKILL');
    healthy = true;
    const restartedAt = Date.now();
    server = await spawnServer({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ...ENV });
    api = client(server.url, (await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'After crash')).key);

    const afterRestart = () => new Set(receiver.received('/crashy').filter((request) => request.receivedAt >= restartedAt).map((request) => request.body.data.id));
    await receiver.waitFor('/crashy', () => afterRestart().size === 15, 20_000);
    expect(afterRestart()).toEqual(new Set(ids));
    const deliveries = await csr.json<{ status: string }[]>('webhooks', 'deliveries', created.id);
    expect(deliveries).toHaveLength(15);
    for (const delivery of deliveries) expect(delivery.status).toBe('delivered');
    const countAfter = receiver.received('/crashy').length;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(receiver.received('/crashy')).toHaveLength(countAfter);
  });
});

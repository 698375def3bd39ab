import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/webhooks/signature.js';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { startReceiver, RECEIVER_CA_FILE, type Receiver } from '../support/receiver.js';
import { client } from '../support/service.js';

/**
 * The webhook consumers' tools of issue 29 (`csr webhooks resend`, `recover`), run as an operator
 * runs them against the data directory of a running server, with a real HTTPS receiver that
 * verifies every request with the package's own helper.
 */

const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE, WEBHOOK_RETRY_DELAYS: '200ms,200ms,200ms,200ms,200ms' };
const dataDir = mkdtempSync(join(tmpdir(), 'csr-cli-webhook-tools-'));
const csr = csrTool(dataDir, ENV);
let receiver: Receiver;
let server: ServerProcess;
let slug: string;
let api: ReturnType<typeof client>;

interface Created {
  id: string;
  secret: string;
}

interface Shown {
  id: number;
  eventId: string;
  event: string;
  status: string;
  attempts: number;
  cause: string | null;
  originalId: number | null;
}

beforeAll(async () => {
  receiver = await startReceiver();
  server = await spawnServer({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ...ENV });
  slug = `tools-${Date.now()}`;
  await csr.json('workspaces', 'create', slug);
  const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'Tools');
  api = client(server.url, key);
});

afterAll(async () => {
  await server?.kill();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('csr webhooks resend', () => {
  it('sends the same event and payload again under a new delivery id, signed with the current secret, listed with its cause', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Resent', '--url', `${receiver.origin}/resent`, '--objects', 'clients');
    expect((await api.post('/api/v1/clients', { name: 'Resend Ltd' })).status).toBe(201);
    const [first] = await receiver.waitFor('/resent', (requests) => requests.length === 1);
    const [original] = await csr.json<Shown[]>('webhooks', 'deliveries', created.id);
    expect(original).toMatchObject({ status: 'delivered', cause: null, originalId: null });
    const rotated = await csr.json<{ secret: string }>('webhooks', 'rotate-secret', created.id);

    const resent = await csr.json<Shown>('webhooks', 'resend', String(original!.id));
    expect(resent).toMatchObject({ eventId: original!.eventId, event: 'clients.created', status: 'delivered', attempts: 1, cause: 'resend', originalId: original!.id });
    expect(resent.id).not.toBe(original!.id);

    const [, again] = receiver.received('/resent');
    expect(again!.headers['x-svc-delivery']).toBe(String(resent.id));
    expect(first!.headers['x-svc-delivery']).toBe(String(original!.id));
    const event = verifyWebhook({ payload: again!.rawBody, headers: again!.headers, secret: rotated.secret });
    expect(() => verifyWebhook({ payload: again!.rawBody, headers: again!.headers, secret: created.secret })).toThrow(/signature/i);
    const { sentAt: sentFirst, ...sameFirst } = first!.body;
    const { sentAt: sentAgain, ...sameAgain } = event as unknown as Record<string, unknown>;
    expect(sameAgain).toEqual(sameFirst);
    expect(Date.parse(String(sentAgain))).toBeGreaterThan(Date.parse(sentFirst));

    const listed = await csr.json<Shown[]>('webhooks', 'deliveries', created.id);
    expect(listed.map((delivery) => [delivery.id, delivery.cause])).toEqual([
      [resent.id, 'resend'],
      [original!.id, null],
    ]);
  });

  it('exits 1 and still prints the delivery when the receiver refuses the resend', async () => {
    const created = await csr.json<Created>('webhooks', 'create', '--workspace', slug, '--name', 'Refuses', '--url', `${receiver.origin}/refuses`, '--objects', 'tasks');
    await api.post('/api/v1/tasks', { subject: 'Refused later', status: 'Done' });
    await receiver.waitFor('/refuses', (requests) => requests.length === 1);
    const [original] = await csr.json<Shown[]>('webhooks', 'deliveries', created.id);
    receiver.on('/refuses', 500);
    const result = await csr.run('webhooks', 'resend', String(original!.id), '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'retrying', responseCode: 500, cause: 'resend', originalId: original!.id });
  });

  it('an unknown or malformed delivery id fails with exit 1 and a clear message', async () => {
    expect(await csr.fails(1, 'webhooks', 'resend', '987654321')).toBe('csr: delivery 987654321 not found\n');
    expect(await csr.fails(1, 'webhooks', 'resend', 'abc')).toBe('csr: delivery abc not found\n');
    expect(await csr.fails(2, 'webhooks', 'resend')).toMatch(/deliveryId/);
  });
});

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/webhooks/signature.js';
import { csrTool } from '../support/cli.js';
import { startCliServer, type CliServer } from '../support/cliServer.js';
import { repoRoot } from '../support/process.js';

/**
 * `csr webhooks listen --forward-to` (issue 29) end to end: a server in its own process whose
 * address rule is NOT lifted (no WEBHOOK_ALLOW_PRIVATE_TARGETS), a `csr webhooks listen` child
 * process, and a plain-http receiver on loopback that verifies every request with the package's
 * helper and the temporary secret the session printed.
 */

const ENV = { WEBHOOK_RETRY_DELAYS: '200ms,200ms' };
const dataDir = mkdtempSync(join(tmpdir(), 'csr-cli-webhook-listen-'));
const csr = csrTool(dataDir, ENV);
let harness: CliServer;

interface Local {
  port: number;
  requests: { path: string; headers: IncomingMessage['headers']; rawBody: string }[];
  status: number;
  /** Requests still to refuse with a 500 before answering `status` again. */
  failures: number;
  server: Server;
}
let local: Local;

beforeAll(async () => {
  harness = await startCliServer(csr, dataDir, ENV, 'Listen');
  const requests: Local['requests'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '/', headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(local.failures > 0 ? (local.failures--, 500) : local.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  local = { port: (server.address() as AddressInfo).port, requests, status: 204, failures: 0, server };
});

afterAll(async () => {
  await new Promise((resolve) => local?.server.close(resolve));
  await harness?.close();
});

const sessions: ChildProcessWithoutNullStreams[] = [];
afterAll(() => sessions.forEach((child) => child.exitCode === null && child.kill('SIGKILL')));

function startListen(...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ...ENV };
  delete env.EVENTSTORE_URL;
  delete env.MONGODB_URL;
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [join(repoRoot, 'bin', 'csr'), 'webhooks', 'listen', ...args], { cwd: repoRoot, env });
  sessions.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return {
    child,
    exited,
    output: () => stdout,
    errors: () => stderr,
    async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const match = stdout.match(pattern);
        if (match) return match;
        if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}; stdout: ${stdout}; stderr: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

const waitForRequests = async (count: number, timeoutMs = 20_000) => {
  const end = Date.now() + timeoutMs;
  while (local.requests.length < count) {
    if (Date.now() > end) throw new Error(`timed out: ${local.requests.length} of ${count} requests`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return local.requests;
};

describe('csr webhooks listen --forward-to', () => {
  it('forwards the matching events, signed with the printed temporary secret, one line each, and removes its webhook on Ctrl-C', async () => {
    const session = startListen('--workspace', harness.slug, '--forward-to', `http://localhost:${local.port}/hooks`, '--objects', 'clients');
    const [, webhookId] = await session.waitFor(/temporary webhook ([0-9a-f-]{36})\)/);
    const [, secret] = await session.waitFor(/Signing secret \(this session only\): (whsec_\S+)/);
    await session.waitFor(/^Ready\./m);
    const listed = await csr.json<{ id: string; url: string }[]>('webhooks', 'list', '--workspace', harness.slug);
    expect(listed.find((webhook) => webhook.id === webhookId)).toMatchObject({ url: `http://localhost:${local.port}/hooks` });

    const created = await harness.api.post('/api/v1/clients', { name: 'Listened Ltd' });
    const clientId = created.body.ids[0] as string;
    await harness.api.post('/api/v1/contacts', { firstName: 'Not', lastName: 'Forwarded' });
    await harness.api.patch(`/api/v1/clients/${clientId}`, { name: 'Listened Ltd (renamed)' });
    const requests = await waitForRequests(2);
    const events = requests.map((request) => verifyWebhook({ payload: request.rawBody, headers: request.headers, secret: secret! }));
    expect(events.map((event) => [event.event, (event.data as { id: string }).id])).toEqual([
      ['clients.created', clientId],
      ['clients.updated', clientId],
    ]);
    expect(requests.map((request) => request.path)).toEqual(['/hooks', '/hooks']);
    for (const request of requests) {
      // time, event, status, ms (and the ids that tie the line to the request)
      await session.waitFor(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z  ${request.headers['x-svc-event']}  204  \\d+ ms  delivery ${request.headers['x-svc-delivery']}  event ${JSON.parse(request.rawBody).id}$`, 'm'));
    }
    // Sent once each, by the session: no dispatcher attempted them.
    const deliveries = await csr.json<{ id: number; status: string; attempts: number }[]>('webhooks', 'deliveries', webhookId!);
    expect(deliveries.map((delivery) => [delivery.status, delivery.attempts])).toEqual([
      ['delivered', 1],
      ['delivered', 1],
    ]);
    // The tools that send with the dispatchers' sender leave a session's webhook to the session.
    const sessions = /belongs to a `csr webhooks listen` session/;
    expect(await csr.fails(1, 'webhooks', 'test', webhookId!)).toMatch(sessions);
    expect(await csr.fails(1, 'webhooks', 'resend', String(deliveries[0]!.id))).toMatch(sessions);
    expect(await csr.fails(1, 'webhooks', 'recover', webhookId!, '--since', '2020-01-01T00:00:00Z')).toMatch(sessions);

    session.child.kill('SIGINT');
    expect(await session.exited).toBe(0);
    expect(session.output()).toContain(`Stopped: temporary webhook ${webhookId} removed.`);
    expect(session.errors()).toBe('');
    const after = await csr.json<{ id: string }[]>('webhooks', 'list', '--workspace', harness.slug);
    expect(after.map((webhook) => webhook.id)).not.toContain(webhookId);
    await harness.api.post('/api/v1/clients', { name: 'After the session' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(local.requests).toHaveLength(2);
  });

  it('prints a failed attempt with its status and retries it while the session runs', async () => {
    local.requests.length = 0;
    // One refusal, then 204: set by the test after it saw the 500, the retry (200 ms later) could
    // be refused too on a machine where the test process stalls a moment.
    local.failures = 1;
    const session = startListen('--workspace', harness.slug, '--forward-to', `http://127.0.0.1:${local.port}/failing`, '--objects', 'tasks', '--events', 'created');
    await session.waitFor(/^Ready\./m);
    await harness.api.post('/api/v1/tasks', { subject: 'Retried locally', status: 'Done' });
    await session.waitFor(/tasks\.created {2}500 {2}\d+ ms {2}delivery \d+ {2}event \S+ {2}retrying: receiver answered 500/);
    await session.waitFor(/tasks\.created {2}204 /);
    expect(local.requests.map((request) => request.path)).toEqual(['/failing', '/failing']);
    session.child.kill('SIGTERM');
    expect(await session.exited).toBe(0);
  });

  it('refuses a --forward-to that is not on this machine, and an unknown workspace, with exit 1; ordinary webhooks still refuse http and loopback', async () => {
    expect(await csr.fails(1, 'webhooks', 'listen', '--workspace', harness.slug, '--forward-to', 'http://example.com/hooks')).toMatch(/--forward-to is refused: --forward-to must be on this machine/);
    expect(await csr.fails(1, 'webhooks', 'listen', '--workspace', harness.slug, '--forward-to', 'http://10.0.0.8:3000/hooks')).toMatch(/must be on this machine/);
    expect(await csr.fails(1, 'webhooks', 'listen', '--workspace', harness.slug, '--forward-to', 'ftp://localhost/hooks')).toMatch(/only http:\/\/ or https:\/\//);
    expect(await csr.fails(1, 'webhooks', 'listen', '--workspace', 'no-such-workspace', '--forward-to', `http://localhost:${local.port}/hooks`)).toMatch(/workspace "no-such-workspace" not found/);
    expect(await csr.fails(2, 'webhooks', 'listen', '--workspace', harness.slug)).toMatch(/forward-to/);
    expect(await csr.fails(1, 'webhooks', 'create', '--workspace', harness.slug, '--name', 'Sneaky', '--url', `http://localhost:${local.port}/hooks`)).toMatch(/only https:\/\//);
    expect(await csr.fails(1, 'webhooks', 'create', '--workspace', harness.slug, '--name', 'Sneaky', '--url', `https://127.0.0.1:${local.port}/hooks`)).toMatch(/refused/);
    const left = await csr.json<{ name: string }[]>('webhooks', 'list', '--workspace', harness.slug);
    expect(left.filter((webhook) => webhook.name.startsWith('csr webhooks listen'))).toEqual([]);
  });
});

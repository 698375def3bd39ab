import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody, verifyWebhook, WebhookVerificationError } from '../../src/webhooks/signature.js';
import { repoRoot } from '../support/process.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';
import { freePort } from '../support/ports.js';

/**
 * docs/webhooks.md as a receiver's author reads it: its test vectors hold for verifyWebhook, and
 * its Node.js receiver examples, run as they are written, accept a real delivery's bytes and refuse
 * a changed one.
 */

const docs = readFileSync(join(repoRoot, 'docs', 'webhooks.md'), 'utf8');

interface Vector {
  secret: string;
  body: string;
  signature: string;
  now: Date;
}

function vectors(): Vector[] {
  const table = docs.slice(docs.indexOf('<!-- vectors -->'));
  return [...table.matchAll(/^\| `([^`]+)` \| `([^`]+)` \| `([^`]+)` \| `([^`]+)` \|$/gm)].map((row) => ({
    secret: row[1]!,
    body: row[2]!,
    signature: row[3]!,
    now: new Date(row[4]!),
  }));
}

const failure = (run: () => unknown): string => {
  try {
    run();
    return 'accepted';
  } catch (error) {
    return error instanceof WebhookVerificationError ? error.code : `untyped: ${String(error)}`;
  }
};

describe('the test vectors of docs/webhooks.md', () => {
  const all = vectors();

  it('are there', () => {
    expect(all.length).toBeGreaterThanOrEqual(2);
  });

  it.each(all.map((vector, i) => [i, vector] as const))('vector %i: the signature is the HMAC of the exact bytes and verifies at its `now`', (_, vector) => {
    expect(signBody(vector.body, vector.secret)).toBe(vector.signature);
    const headers = { 'X-SVC-Signature': vector.signature, 'X-SVC-Timestamp': JSON.parse(vector.body).sentAt };
    expect(verifyWebhook({ payload: Buffer.from(vector.body, 'utf8'), headers, secret: vector.secret, now: vector.now })).toEqual(JSON.parse(vector.body));
  });

  it('are refused as the page says: another secret, 300 s and 1 ms late, a changed byte, no header', () => {
    const [first, second] = all as [Vector, Vector];
    const headers = { 'x-svc-signature': first.signature };
    const sentAt = Date.parse(JSON.parse(first.body).sentAt);
    expect(failure(() => verifyWebhook({ payload: first.body, headers, secret: second.secret, now: first.now }))).toBe('bad_signature');
    expect(failure(() => verifyWebhook({ payload: first.body, headers, secret: first.secret, now: new Date(sentAt + 300_001) }))).toBe('timestamp_out_of_tolerance');
    expect(failure(() => verifyWebhook({ payload: first.body, headers, secret: first.secret, now: new Date(sentAt + 299_000), toleranceSeconds: 60 }))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(failure(() => verifyWebhook({ payload: first.body.replace('Globex', 'Globey'), headers, secret: first.secret, now: first.now }))).toBe('bad_signature');
    expect(failure(() => verifyWebhook({ payload: first.body, headers: {}, secret: first.secret, now: first.now }))).toBe('missing_header');
    const wrongTime = { ...headers, 'x-svc-timestamp': '2026-01-01T12:00:01.000Z' };
    expect(failure(() => verifyWebhook({ payload: first.body, headers: wrongTime, secret: first.secret, now: first.now }))).toBe('timestamp_mismatch');
    const notJson = 'not json';
    expect(failure(() => verifyWebhook({ payload: notJson, headers: { 'x-svc-signature': signBody(notJson, 's') }, secret: 's' }))).toBe('malformed_body');
  });
});

function example(name: string): string {
  const match = new RegExp('```js receiver:' + name + '\\n([\\s\\S]*?)```').exec(docs);
  if (!match) throw new Error(`docs/webhooks.md has no receiver:${name} example`);
  return match[1]!;
}


describe('the Node.js receiver examples of docs/webhooks.md, against a real delivery', () => {
  let h: WebhookHarness;
  let delivery: { rawBody: Buffer; headers: Record<string, string> };
  let secret: string;
  const running: ChildProcess[] = [];

  beforeAll(async () => {
    h = await startWebhookHarness();
    const created = await h.hook('/real');
    secret = created.secret;
    await h.api.post('/api/v1/clients', { name: 'Globex' });
    const [request] = await h.receiver.waitFor('/real', (requests) => requests.length === 1);
    delivery = { rawBody: Buffer.from(request!.rawBody), headers: request!.headers as Record<string, string> };
  });

  afterAll(async () => {
    for (const child of running) child.kill('SIGKILL');
    await h?.close();
  });

  /** The example run on a free port, once it answers there. */
  async function listening(file: string): Promise<{ port: number; output(): string }> {
    const port = await freePort(null);
    const child = spawn(process.execPath, [file], { env: { ...process.env, PORT: String(port), SIGNING_SECRET: secret }, stdio: ['ignore', 'pipe', 'pipe'] });
    running.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    // A deadline, not a number of tries: a busy machine may take seconds to start Node and load the framework.
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false)) return { port, output: () => output };
      if (child.exitCode !== null) throw new Error(`the example exited: ${output}`);
      if (Date.now() > deadline) throw new Error(`the example did not listen within 20 s: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it.each(['hono', 'express'])('%s: answers 204 to the delivery and 401 to a changed byte or another secret', async (name) => {
    // Inside the package folder, so that `customer-success-records/verify` resolves to this build.
    const dir = join(repoRoot, 'dist', 'receiver-examples');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${name}.mjs`);
    writeFileSync(file, example(name));
    const { port, output } = await listening(file);
    const send = (body: Buffer, headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${port}/hooks`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    const forwarded = Object.fromEntries(Object.entries(delivery.headers).filter(([key]) => key.startsWith('x-svc-')));
    expect((await send(delivery.rawBody, forwarded)).status).toBe(204);
    const changed = Buffer.from(delivery.rawBody.toString('utf8').replace('Globex', 'Globey'));
    expect((await send(changed, forwarded)).status).toBe(401);
    const otherSecret = { ...forwarded, 'x-svc-signature': signBody(delivery.rawBody, 'whsec_other') };
    expect((await send(delivery.rawBody, otherSecret)).status).toBe(401);
    expect(output()).toContain('clients.created');
  });
});

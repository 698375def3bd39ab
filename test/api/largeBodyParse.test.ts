import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';

/**
 * Issue 39 item 4: huge valid JSON (a 5 MB array of 1.66 million `{}`) is parsed off the event
 * loop, so that other clients are answered meanwhile, and a body of more values than any request
 * needs is refused with 413 once parsed, without being handed to the API at all. A real server
 * (the built code, where the parsing thread's script exists).
 */

let server: ServerProcess;
let key: string;

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-large-json-'));
  const csr = csrTool(dataDir);
  await csr.json('workspaces', 'create', 'json');
  ({ key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'json', '--name', 'parser'));
  server = await spawnServer({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
}, 60_000);
afterAll(() => server?.kill('SIGTERM'));

/** A POST whose body is all sent when `sent` settles; `answered` settles with its answer. */
function post(path: string, body: string) {
  let sentAt = 0;
  const answered = new Promise<{ status: number; body: any; at: number }>((resolve, reject) => {
    const sending = request(new URL(path, server.url), {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    });
    sending.once('response', (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.once('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text), at: performance.now() }));
    });
    sending.once('error', reject);
    sending.end(body, () => (sentAt = performance.now()));
  });
  return { answered, sentAt: () => sentAt };
}

describe('huge valid JSON bodies', () => {
  it('a GET from another client is answered while a 5 MB body of 1.66 million {} is parsed; the body is 413', async () => {
    const created = post('/api/v1/clients', JSON.stringify({ name: 'Read meanwhile' }));
    const id = (await created.answered).body.ids[0] as string;

    const huge = post('/api/v1/clients', `[${Array.from({ length: 1_660_000 }, () => '{}').join(',')}]`);
    let done = false;
    void huge.answered.finally(() => (done = true));
    // GETs one after another, on connections of their own, for as long as the large POST runs.
    const gets: number[] = [];
    while (!done) {
      const response = await fetch(`${server.url}/api/v1/clients/${id}`, { headers: { Authorization: `Bearer ${key}` } });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      gets.push(performance.now());
    }
    const answer = await huge.answered;
    // The body arrives within a small part of the time the POST takes; its parse is the rest. On
    // the event loop no GET could be answered during the parse; beside it, they go on.
    const sentAt = huge.sentAt();
    const secondHalf = sentAt + (answer.at - sentAt) / 2;
    expect(gets.filter((at) => at > secondHalf && at < answer.at).length, `GETs at ${gets.map((at) => Math.round(at - sentAt)).join(', ')} ms; POST answered at ${Math.round(answer.at - sentAt)} ms`).toBeGreaterThan(0);
    expect(answer.status).toBe(413);
    expect(answer.body.error.message).toMatch(/more than 250000 JSON values; send fewer records per request/);
  }, 60_000);

  it('large bodies parsed on the thread: a 1,000-record upsert is saved, bad JSON and deep nesting are 422', async () => {
    const records = Array.from({ length: 1000 }, (_, i) => ({ name: `Parsed ${i}`, notes: 'n'.repeat(100) }));
    const saved = await post('/api/v1/clients', JSON.stringify(records)).answered;
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    expect(saved.body.created).toBe(1000);

    const padding = ' '.repeat(70_000); // over the size parsed in place
    const invalid = await post('/api/v1/clients', `{"name": "x",${padding}`).answered;
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.message).toMatch(/^the request body is not valid JSON: /);
    const deep = await post('/api/v1/clients', `${'['.repeat(40)}${']'.repeat(40)}${padding}`).answered;
    expect(deep.status).toBe(422);
    expect(deep.body.error.message).toBe('the request body is nested more than 32 levels deep');
  }, 60_000);
});

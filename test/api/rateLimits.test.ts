import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { startTestService } from '../support/service.js';
import { eventually, until } from '../support/until.js';

/**
 * Issue 43 item 3: rate limits per API key, on a real server of two API processes. A key in a
 * loop gets 429s with Retry-After and the RateLimit headers while another key goes on unhindered;
 * both processes spend one bucket per key; a bulk write counts its records; `csr keys list` shows
 * each key's limit and its refusals; /metrics counts them per workspace.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-ratelimits-'));
const csr = csrTool(dataDir);
let server: ServerProcess;
let slug: string;
const keys: Record<'looping' | 'other' | 'bulk', { id: string; key: string }> = {} as never;

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: any };

/** Each request on a connection of its own, so that both API processes answer some. */
function send(key: string, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const outgoing = request(`${server.url}${path}`, { method, agent: false, headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: text ? JSON.parse(text) : null }));
    });
    outgoing.on('error', reject);
    outgoing.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

beforeAll(async () => {
  ({ slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'limits'));
  for (const name of ['looping', 'other', 'bulk'] as const) keys[name] = await csr.json<{ id: string; key: string }>('keys', 'create', '--workspace', slug, '--name', name);
  // Refills one token every 12 s: within the test a bucket is what it was given, no more.
  await csr.json('keys', 'update', keys.looping.id, '--rate', '5/m,burst=10');
  await csr.json('keys', 'update', keys.bulk.id, '--rate', '5/m,burst=10');
  server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2', RATE_LIMIT_DEFAULT: '1000/s,burst=1000' });
  await until(() => server.started().filter((s) => s.roles.join() === 'api').length === 2, 20_000, 'two API processes');
});

afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('rate limits per API key', () => {
  it('a key in a loop gets 429s with Retry-After and the RateLimit headers; one bucket across both API processes; another key is not slowed', async () => {
    const loop = Array.from({ length: 30 }, () => send(keys.looping.key, 'GET', '/api/v1/clients'));
    const other = Array.from({ length: 30 }, () => send(keys.other.key, 'GET', '/api/v1/clients'));
    const [looping, others] = [await Promise.all(loop), await Promise.all(other)];

    const allowed = looping.filter((answer) => answer.status === 200);
    const refused = looping.filter((answer) => answer.status === 429);
    // One bucket of 10 for the key, not 10 per process (at most one token refilled meanwhile).
    expect(allowed.length).toBeGreaterThanOrEqual(10);
    expect(allowed.length).toBeLessThanOrEqual(11);
    expect(allowed.length + refused.length).toBe(30);
    for (const answer of allowed) {
      expect(answer.headers['ratelimit-policy']).toBe('"key";q=10;w=120');
      expect(answer.headers['ratelimit']).toMatch(/^"key";r=\d+;t=\d+$/);
    }
    for (const answer of refused) {
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(answer.headers['retry-after']).toMatch(/^\d+$/);
      expect(answer.headers['ratelimit-policy']).toBe('"key";q=10;w=120');
      expect(answer.headers['ratelimit']).toMatch(/^"key";r=0;t=\d+$/);
      expect(answer.body.error).toEqual({ status: 429, message: expect.stringMatching(/rate limit \(5\/m,burst=10\) is used up; retry after \d+ s/) });
    }
    // The other key, under the operator's default, was answered every time.
    expect(others.map((answer) => answer.status)).toEqual(Array(30).fill(200));
    expect(others[0]!.headers['ratelimit-policy']).toBe('"key";q=1000;w=1');
  });

  it("a key in a loop keeps getting 429s with consistent headers while another key's p50 stays as before", async () => {
    const median = (samples: number[]) => [...samples].sort((x, y) => x - y)[Math.floor(samples.length / 2)]!;
    const p50OfOther = async () => {
      const samples: number[] = [];
      for (let i = 0; i < 80; i++) {
        const started = performance.now();
        const answer = await send(keys.other.key, 'GET', '/api/v1/clients?limit=1');
        samples.push(performance.now() - started);
        expect(answer.status).toBe(200);
      }
      return median(samples);
    };
    // A shared machine's noise (other suites, two cores) can swamp one measurement, and a real
    // starvation would show in every one: the median is taken in up to three rounds, and one
    // round within bounds is enough.
    const rounds: { before: number; during: number; after: number }[] = [];
    const refusals: Answer[] = [];
    const withinBounds = ({ before, during, after }: (typeof rounds)[number]) => during <= 2 * Math.max(before, after) + 5;
    const started = Date.now();
    while (rounds.length < 3 && !rounds.some(withinBounds)) {
      const before = await p50OfOther();
      // Four clients in a tight loop over the used-up key (5/m,burst=10), for as long as the other key is measured.
      let looping = true;
      const loops = Array.from({ length: 4 }, async () => {
        while (looping) refusals.push(await send(keys.looping.key, 'GET', '/api/v1/clients?limit=1'));
      });
      const during = await p50OfOther();
      looping = false;
      await Promise.all(loops);
      rounds.push({ before, during, after: await p50OfOther() });
    }

    expect(refusals.length).toBeGreaterThan(80);
    // One token comes back every 12 s, and the loops took what came back.
    const refilled = 1 + Math.floor((Date.now() - started) / 12_000);
    expect(refusals.filter((answer) => answer.status === 200).length).toBeLessThanOrEqual(refilled);
    for (const answer of refusals.filter((each) => each.status === 429)) {
      // A retry can succeed within 1 to 12 s, and the headers say the same.
      const retryAfter = Number(answer.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(12);
      expect(answer.headers['ratelimit-policy']).toBe('"key";q=10;w=120');
      expect(answer.headers['ratelimit']).toBe(`"key";r=0;t=${retryAfter}`);
    }
    // The loop costs the server some CPU (a 429 is answered without the store), not the other key's turn:
    // its median stays within twice what it was, plus a few milliseconds.
    const shown = rounds.map(({ before, during, after }) => `before ${before.toFixed(1)} ms, during ${during.toFixed(1)} ms, after ${after.toFixed(1)} ms`);
    expect(rounds.some(withinBounds), `p50 of the other key in each round: ${shown.join('; ')}`).toBe(true);
  });

  it('a write of many records counts one token per record past the first', async () => {
    const many = await send(keys.bulk.key, 'POST', '/api/v1/contacts', Array.from({ length: 12 }, (_, i) => ({ firstName: `Bulk ${i}` })));
    expect(many.status).toBe(429);
    expect((await send(keys.bulk.key, 'GET', '/api/v1/contacts?firstName=Bulk%200')).body.total).toBe(0);
    const some = await send(keys.bulk.key, 'POST', '/api/v1/contacts', Array.from({ length: 5 }, (_, i) => ({ firstName: `Some ${i}` })));
    expect(some.status).toBe(201);
  });

  it('csr keys list shows each key\'s limit and its recent 429s', async () => {
    const listed = await eventually(
      () => csr.json<{ id: string; rateLimit: string; refused: number; refusedAt: string | null }[]>('keys', 'list', '--workspace', slug),
      (found) => (found.find((key) => key.id === keys.looping.id)?.refused ?? 0) >= 19,
      20_000,
      'the refusals in keys list',
    );
    expect(listed.find((key) => key.id === keys.looping.id)).toMatchObject({ rateLimit: '5/m,burst=10', refusedAt: expect.any(String) });
    expect(listed.find((key) => key.id === keys.other.id)).toMatchObject({ rateLimit: 'default', refused: 0, refusedAt: null });
    expect(await csr.fails(1, 'keys', 'update', keys.other.id, '--rate', 'fast')).toMatch(/--rate: not a rate limit: "fast" \(use <requests>\/<s\|m\|h>/);
  });
});

describe('rate limits in one process', () => {
  it('none unless configured: no headers, no refusals', async () => {
    const svc = await startTestService();
    try {
      const api = await svc.workspaceClient();
      const answer = await api.get('/api/v1/clients');
      expect(answer.headers.get('RateLimit-Policy')).toBeNull();
    } finally {
      await svc.stop();
    }
  });

  it('/metrics counts the 429s per workspace', async () => {
    const svc = await startTestService({ RATE_LIMIT_DEFAULT: '1/h', METRICS: 'on' });
    try {
      const ws = await svc.workspace();
      const { key } = await ws.key();
      const get = () => svc.service.app!.request('/api/v1/clients', { headers: { Authorization: `Bearer ${key}` } });
      expect((await get()).status).toBe(200);
      const refused = await get();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('Retry-After')).toMatch(/^\d+$/);
      const metrics = await (await svc.service.app!.request('/metrics')).text();
      expect(metrics).toContain(`csr_rate_limited_total{workspace="${ws.id}"} 1`);
    } finally {
      await svc.stop();
    }
  });

  it('RATE_LIMIT_DEFAULT that is not a limit stops the start with a clear message', () => {
    expect(() => loadConfig({ RATE_LIMIT_DEFAULT: '100 per second' })).toThrow(
      'invalid configuration: RATE_LIMIT_DEFAULT: not a rate limit: "100 per second" (use <requests>/<s|m|h> with an optional ,burst=<requests>, e.g. 100/s,burst=200 or 20/m)',
    );
    expect(loadConfig({ RATE_LIMIT_DEFAULT: '100/s, burst=200' }).rateLimitDefault).toEqual({ perSecond: 100, burst: 200, text: '100/s,burst=200' });
  });
});

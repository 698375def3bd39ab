import { readFileSync } from 'node:fs';
import { request as httpRequest, Agent } from 'node:http';

/**
 * Issue 22 item 8: GET one record while 24 clients keep sending 5 MB bodies (1,000-record upserts
 * of about 5 KB each). GETs run one at a time on their own connection; the server's resident
 * memory (all its threads) is sampled from /proc meanwhile. Bodies that get 503 (the body budget
 * is spent) are counted apart: they are the bound at work, not failures.
 *
 * Issue 39 item 4, the same with huge valid JSON that costs its parse: 16 clients sending arrays
 * of 2.5 million numbers, and 32 sending arrays of 1.66 million `{}` (both 5 MB, both refused
 * once parsed: more values than any request may hold).
 */

export interface LargeBodyDeps {
  key: string;
  startServer(): Promise<{ url: string; pid: number; stop(): Promise<void> }>;
}

const DURATION_MS = 15_000;

export interface LargeBodyLoad {
  senders: number;
  /** What each sender posts, again and again, and what the scenario calls it. */
  body(): Buffer;
  what: string;
  target: string;
}

export const UPSERTS: LargeBodyLoad = {
  senders: 24,
  body: () => {
    // Conversations are never matched by name: every record of every body is created.
    const content = 'c'.repeat(5000);
    return Buffer.from(JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ subject: `Large ${i}`, date: '2025-01-01T10:00:00Z', channel: 'Email', content }))));
  },
  what: '5 MB bodies (1,000 conversations each)',
  target: 'GET p99 < 100 ms, RSS < 500 MB',
};

export const NUMBERS: LargeBodyLoad = {
  senders: 16,
  body: () => Buffer.from(`[${'1,'.repeat(2_499_999)}1]`),
  what: '5 MB arrays of 2.5 million numbers',
  target: 'GET p50 < 250 ms',
};

export const EMPTY_OBJECTS: LargeBodyLoad = {
  senders: 32,
  body: () => Buffer.from(`[${'{},'.repeat(1_659_999)}{}]`),
  what: '5 MB arrays of 1.66 million {}',
  target: 'GET p50 < 250 ms',
};

export async function largeBodyBench(deps: LargeBodyDeps, load: LargeBodyLoad = UPSERTS): Promise<{ scenario: string; result: string; target: string }> {
  const senders = load.senders;
  const server = await deps.startServer();
  const headers = { authorization: `Bearer ${deps.key}`, 'content-type': 'application/json' };
  try {
    const created = await fetch(`${server.url}/api/v1/clients`, { method: 'POST', headers, body: JSON.stringify({ name: 'Read while loaded' }) });
    const id = ((await created.json()) as { ids: string[] }).ids[0]!;
    const body = load.body();

    const statuses = new Map<number, number>();
    let stopAt = Date.now() + DURATION_MS;
    const agent = new Agent({ keepAlive: true, maxSockets: senders });
    const guarded = new WeakSet<object>();
    const send = () =>
      new Promise<number>((resolve) => {
        const req = httpRequest(`${server.url}/api/v1/conversations`, { method: 'POST', agent, headers: { ...headers, 'content-length': body.length } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        // A 503 comes before the body is read: the server may close while this side still writes.
        req.on('error', () => resolve(0));
        req.on('socket', (socket) => {
          if (guarded.has(socket)) return;
          guarded.add(socket);
          socket.on('error', () => undefined);
        });
        req.end(body);
      });
    const sender = async () => {
      while (Date.now() < stopAt) {
        const status = await send();
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    };

    let peakRssMiB = 0;
    const sampler = setInterval(() => {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'));
      if (match) peakRssMiB = Math.max(peakRssMiB, Number(match[1]) / 1024);
    }, 50);
    const running = Array.from({ length: senders }, sender);
    const getMs: number[] = [];
    await new Promise((resolve) => setTimeout(resolve, 1000)); // let the senders fill the server
    stopAt = Date.now() + DURATION_MS;
    while (Date.now() < stopAt) {
      const started = performance.now();
      const response = await fetch(`${server.url}/api/v1/clients/${id}`, { headers });
      await response.arrayBuffer();
      if (response.status === 200) getMs.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await Promise.all(running);
    clearInterval(sampler);
    agent.destroy();

    const sorted = [...getMs].sort((a, b) => a - b);
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
    const answers = [...statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${count}× ${status || 'error'}`).join(', ');
    return {
      scenario: `GET one record while ${senders} clients send ${load.what}, ${DURATION_MS / 1000} s`,
      result: `GET p50 ${at(50).toFixed(1)} ms, p99 ${at(99).toFixed(1)} ms (${getMs.length} GETs); server RSS peak ${Math.round(peakRssMiB)} MiB; bodies: ${answers}`,
      target: load.target,
    };
  } finally {
    await server.stop();
  }
}

import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer } from '../support/process.js';
import { until } from '../support/until.js';

/**
 * Issue 39 item 3: SIGTERM while 16 clients keep their connections alive and send one request
 * after another. Closing their idle connections at once raced each client's next request, already
 * on its way: the client saw its connection reset. A stop now answers what still arrives on open
 * connections (with `Connection: close`) for a moment before it closes what stays idle.
 */

const CLIENTS = 16;

interface Outcome {
  answered: number;
  /** The answer that said `Connection: close`, or the refused reconnection: the client's end. */
  ended: 'closed by the server' | 'refused' | null;
  errors: string[];
}

function get(url: string, agent: Agent, key: string): Promise<{ status: number; close: boolean }> {
  return new Promise((resolve, reject) => {
    const sending = request(url, { agent, headers: { Authorization: `Bearer ${key}` } }, (response) => {
      response.resume();
      response.once('end', () => resolve({ status: response.statusCode!, close: response.headers.connection === 'close' }));
      response.once('error', reject);
    });
    sending.once('error', reject);
    sending.end();
  });
}

/** One client: requests back to back on its one kept-alive connection until the server ends it. */
async function client(url: string, key: string, stopping: () => boolean, outcome: Outcome): Promise<Outcome> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    while (outcome.ended === null) {
      try {
        const answer = await get(url, agent, key);
        if (answer.status !== 200) outcome.errors.push(`status ${answer.status}`);
        outcome.answered += 1;
        if (answer.close && stopping()) outcome.ended = 'closed by the server';
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // A new connection once the server has stopped listening: refused, as it must be.
        if (code === 'ECONNREFUSED' && stopping()) outcome.ended = 'refused';
        else {
          outcome.errors.push(`${code ?? ''} ${(error as Error).message}`);
          break;
        }
      }
    }
  } finally {
    agent.destroy();
  }
  return outcome;
}

describe('SIGTERM under keep-alive load', () => {
  it(`${CLIENTS} kept-alive clients see no reset: each gets Connection: close or a refused new connection; exit 0 within 10 s`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'csr-keepalive-stop-'));
    const csr = csrTool(dataDir);
    await csr.json('workspaces', 'create', 'drain');
    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'drain', '--name', 'drainer');
    const server = await spawnServer({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
    const url = `${server.url}/api/v1/clients?limit=1`;
    let stopping = false;
    const seen: Outcome[] = Array.from({ length: CLIENTS }, () => ({ answered: 0, ended: null, errors: [] }));
    const outcomes = seen.map((outcome) => client(url, key, () => stopping, outcome));
    // Every client is in its loop before the stop.
    await until(() => seen.every((outcome) => outcome.answered >= 5 || outcome.errors.length > 0), 30_000, 'every client answered');

    const exited = once(server.child, 'exit');
    const signalledAt = Date.now();
    stopping = true;
    server.child.kill('SIGTERM');
    const [code] = await exited;
    const stoppedMs = Date.now() - signalledAt;
    const results = await Promise.all(outcomes);

    expect(results.flatMap((result) => result.errors)).toEqual([]);
    expect(results.every((result) => result.ended !== null)).toBe(true);
    expect(code).toBe(0);
    expect(stoppedMs).toBeLessThan(10_000);
  }, 90_000);
});

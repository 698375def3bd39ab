import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer } from '../support/process.js';
import { until } from '../support/until.js';

/**
 * A stop answers the change feed's open long polls at once (issue 43): a `wait=30` would
 * otherwise hold SIGTERM until the shutdown deadline, and a deployment's restart with it. The
 * poll gets what there is (here: nothing, an empty page with its cursor), and the process exits.
 */

describe('a stop and the change feed', () => {
  it.each([
    ['SIGTERM', '1'],
    ['SIGINT', '1'],
    ['SIGTERM', '2'],
  ] as const)('%s with API_PROCESSES=%s answers an open long poll at once with an empty page, and the server exits 0 within a few seconds', async (signal, processes) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'csr-poll-stop-'));
    try {
      const csr = csrTool(dataDir);
      const { slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'poll');
      const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'poller');
      const server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: processes });
      await until(() => server.started().filter((s) => s.roles.join() === 'api').length === Number(processes), 20_000, 'the API processes');
      const headers = { Authorization: `Bearer ${key}` };
      const first = (await (await fetch(`${server.url}/api/v1/events?limit=1000`, { headers })).json()) as { next: string };
      const started = Date.now();
      const polling = fetch(`${server.url}/api/v1/events?wait=30&after=${first.next}`, { headers });
      // The poll is waiting inside the server once a second request on another connection has been answered after it.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
      const exited = once(server.child, 'exit');
      const signalled = Date.now();
      server.child.kill(signal);
      const answer = await polling;
      const answeredAfter = Date.now() - signalled;
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ data: [], next: first.next, hasMore: false });
      const [code] = await exited;
      const exitedAfter = Date.now() - signalled;
      expect(code).toBe(0);
      // At once, not at the 30 s of the poll nor the 10 s deadline of a stop.
      expect(answeredAfter).toBeLessThan(2_000);
      expect(exitedAfter).toBeLessThan(5_000);
      expect(Date.now() - started).toBeLessThan(8_000);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

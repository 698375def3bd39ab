import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { eventually } from '../support/until.js';

/** GET /health/live and /health/ready of a real server process (issue 24 item 4). */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-health-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

async function get(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.json() };
}

describe('health', () => {
  it('is live without a key; ready turns 503 with the reason while the projection lags, and back once a projector catches up', async () => {
    const api = await spawnServer({ DATA_DIR: dataDir, ROLES: 'api', READY_MAX_LAG: '1s' });
    servers.push(api);
    expect(await get(`${api.url}/health/live`)).toEqual({ status: 200, body: { status: 'live' } });
    expect(await get(`${api.url}/health/ready`)).toEqual({ status: 200, body: { status: 'ready', checks: { stores: 'ok', projections: 'ok', disk: 'ok', checkpoints: 'ok' } } });

    // Records reach the log while no projector runs (this api process has none).
    const events = openSqliteEventStore({ path: join(dataDir, 'events.db') });
    const workspaceId = randomUUID();
    for (let i = 0; i < 3; i++) {
      const recordId = randomUUID();
      const actionId = randomUUID();
      await events.append(
        recordStream(recordId),
        [
          {
            id: randomUUID(),
            type: 'RecordCreated',
            data: { schemaVersion: 1, workspaceId, object: 'clients', recordId, fields: { name: `lagging ${i}` } },
            metadata: { source: 'api', actor: { type: 'system', id: 'test', name: 'test' }, actionId, correlationId: actionId, causationId: actionId },
          },
        ],
        { expectedRevision: 'no_stream' },
      );
    }
    await events.close();
    // Until the newest of them is more than READY_MAX_LAG old, measured: a 1.2 s timer may fire
    // before 1.2 s have passed by Date.now(), the clock the server compares the events' times with.
    const appended = Date.now();
    while (Date.now() - appended <= 1_200) await new Promise((resolve) => setTimeout(resolve, 50));
    const lagging = await get(`${api.url}/health/ready`);
    expect(lagging.status).toBe(503);
    expect(lagging.body.status).toBe('not ready');
    expect(lagging.body.checks).toMatchObject({ stores: 'ok', disk: 'ok' });
    expect(lagging.body.checks.projections).toMatch(/^records is 3 events \(\d+ s\) behind the log$/);
    expect(lagging.body.error).toEqual({ status: 503, message: `not ready: projections: ${lagging.body.checks.projections}` });
    expect((await get(`${api.url}/health/live`)).status).toBe(200);

    servers.push(await spawnServer({ DATA_DIR: dataDir }));
    const ready = await eventually(() => get(`${api.url}/health/ready`), (answer) => answer.status === 200, 30_000, 'ready again');
    expect(ready).toEqual({ status: 200, body: { status: 'ready', checks: { stores: 'ok', projections: 'ok', disk: 'ok', checkpoints: 'ok' } } });
  }, 60_000);
});

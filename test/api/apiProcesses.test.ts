import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';
import { until } from '../support/until.js';

/** API_PROCESSES: the API in several processes on one port, the other roles in the primary. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-api-processes-'));
let server: ServerProcess;
let api: ReturnType<typeof client>;
let key: string;

/**
 * A request on a connection of its own: the cluster hands new connections to the API processes in
 * turn, so consecutive requests are answered by different processes (fetch would reuse one).
 */
function onNewConnection(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${server.url}${path}`, { method, agent: false, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    outgoing.on('error', reject);
    outgoing.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Pids of the API processes that said they started, in order. */
function apiPids(): number[] {
  return server
    .started()
    .filter((service) => service.roles.join() === 'api')
    .map((service) => service.pid);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  const csr = csrTool(dataDir);
  await csr.json('workspaces', 'create', 'multi');
  ({ key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'multi', '--name', 'load'));
  server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2' });
  api = client(server.url, key);
  await until(() => apiPids().length === 2, 20_000, 'two API processes');
});

afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('API_PROCESSES=2', () => {
  it('runs two API processes beside the primary, which runs the other roles', () => {
    const pids = apiPids();
    expect(new Set(pids).size).toBe(2);
    expect(pids).not.toContain(server.child.pid);
    expect(server.output()).toContain('"roles":["projector","dispatcher"]');
  });

  it('shows every write to the next read, made on a new connection (the other process)', async () => {
    for (let i = 0; i < 30; i++) {
      const created = await onNewConnection('POST', '/api/v1/clients', { name: `Sequential ${i}` });
      expect(created.status).toBe(201);
      const read = await onNewConnection('GET', `/api/v1/clients/${created.body.ids[0]}`);
      expect(read.status).toBe(200);
      expect(read.body.data.name).toBe(`Sequential ${i}`);
    }
  });

  it('numbers records gap-free when both processes create them at once', async () => {
    const before = (await api.get('/api/v1/clients?limit=1')).body.total as number;
    const created = await Promise.all(Array.from({ length: 40 }, (_, i) => api.post('/api/v1/clients', { name: `Concurrent ${i}` })));
    expect(created.map((response) => response.status)).toEqual(Array(40).fill(201));
    const listed = await api.get('/api/v1/clients?limit=1000');
    const numbers = (listed.body.data as { clientNumber: string }[]).map((record) => record.clientNumber).sort();
    expect(numbers).toEqual(Array.from({ length: before + 40 }, (_, i) => `CL-${String(i + 1).padStart(5, '0')}`));
  });

  it('replaces an API process that dies', async () => {
    const [victim] = apiPids();
    process.kill(victim!, 'SIGKILL');
    await until(() => apiPids().length === 3, 20_000, 'a replacement API process');
    expect(server.output()).toContain('an API process died; starting another');
    expect(server.output()).toContain(`"exit":"pid ${victim}, signal SIGKILL"`);
    const listed = await Promise.all(Array.from({ length: 10 }, () => api.get('/api/v1/clients?limit=1')));
    expect(listed.map((response) => response.status)).toEqual(Array(10).fill(200));
  });

  it('stops every API process with the primary, also when the primary is killed', async () => {
    const running = apiPids().filter(alive);
    expect(running).toHaveLength(2);
    await server.kill('SIGKILL');
    await until(() => running.every((pid) => !alive(pid)), 20_000, 'the API processes to exit');

    server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2' });
    await until(() => apiPids().length === 2, 20_000, 'two API processes');
    const pids = apiPids();
    await server.kill('SIGTERM');
    expect(server.child.exitCode).toBe(0);
    await until(() => pids.every((pid) => !alive(pid)), 20_000, 'the API processes to exit');
  }, 90_000);

  it('a SIGTERM that comes while the roles are still starting stops them once started, with exit code 0', async () => {
    // spawnServer returns at the first API process's start line: the primary is still starting the rest.
    const starting = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2' });
    await starting.kill('SIGTERM');
    expect(starting.child.exitCode).toBe(0);
    expect(starting.output()).toContain('"signal":"SIGTERM"');
    const pids = starting.started().map((service) => service.pid);
    await until(() => pids.every((pid) => !alive(pid)), 20_000, 'every process it started to exit');
  }, 60_000);
});

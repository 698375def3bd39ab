import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';
import { until } from '../support/until.js';

/** The default layout of one process: the API on the main thread, the projector and the dispatcher each in a worker thread. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-background-'));
let server: ServerProcess;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  const csr = csrTool(dataDir);
  await csr.json('workspaces', 'create', 'threads');
  const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'threads', '--name', 'load');
  server = await spawnServer({ DATA_DIR: dataDir });
  api = client(server.url, key);
});

afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('one process, three threads', () => {
  it('runs the projector and the dispatcher each in a thread of the API process', async () => {
    // A worker thread's stdout reaches the process's stdout through the main thread's event loop, so the
    // order of the three "roles started" lines says nothing about which role started first.
    await until(() => server.started().length >= 3, 20_000, 'three "roles started" lines');
    const services = server.started();
    expect(services.map((service) => service.roles.join()).sort()).toEqual(['api', 'dispatcher', 'projector']);
    expect(services.map((service) => service.pid)).toEqual([server.child.pid, server.child.pid, server.child.pid]);
  });

  it('shows every write to the next read, projected in the other thread', async () => {
    for (let i = 0; i < 30; i++) {
      const created = await api.post('/api/v1/clients', { name: `Sequential ${i}` });
      expect(created.status).toBe(201);
      const read = await api.get(`/api/v1/clients/${created.body.ids[0]}`);
      expect(read.status).toBe(200);
      expect(read.body.data).toMatchObject({ name: `Sequential ${i}`, clientNumber: `CL-${String(i + 1).padStart(5, '0')}` });
    }
  });

  it('stops every thread on SIGTERM and exits 0', async () => {
    await server.kill('SIGTERM');
    expect(server.child.exitCode).toBe(0);
    expect(server.output()).not.toContain('"level":50');
  });
});

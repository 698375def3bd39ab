import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';

/**
 * Exactly once per trigger instance through a crash (issue 26): clients are imported while no
 * server runs, so their "created" triggers wait in the log; the server starts reacting and is
 * killed with SIGKILL while it is firing; after a restart every client has exactly one playbook
 * with its steps and tasks, and the runs list names each firing once.
 */

const CLIENTS = 300;
const dataDir = mkdtempSync(join(tmpdir(), 'csr-exactly-once-'));
let server: ServerProcess | undefined;

afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('playbook automation through kill -9', () => {
  it('fires each trigger instance once', { timeout: 120_000 }, async () => {
    const csr = csrTool(dataDir);
    await csr.json('workspaces', 'create', 'crash');
    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'crash', '--name', 'test');

    server = await spawnServer({ DATA_DIR: dataDir });
    let api = client(server.url, key);
    const template = (await api.post('/api/v1/playbookTemplates', { name: 'Welcome', active: true, triggerType: 'When a client is created' })).body.ids[0];
    const steps = (await api.post('/api/v1/templateSteps', [{ name: 'One', template, order: 1 }, { name: 'Two', template, order: 2 }])).body.ids;
    await api.post('/api/v1/templateTasks', [
      { subject: 'Call', step: steps[0], template },
      { subject: 'Mail', step: steps[0], template },
      { subject: 'Review', step: steps[1], template },
    ]);
    await server.kill('SIGTERM');

    const file = join(dataDir, 'clients.csv');
    writeFileSync(file, ['name', ...Array.from({ length: CLIENTS }, (_, i) => `Crash client ${i}`)].join('\n'));
    expect(await csr.json('import', 'clients', file, '--workspace', 'crash')).toMatchObject({ created: CLIENTS, errors: [] });

    server = await spawnServer({ DATA_DIR: dataDir });
    api = client(server.url, key);
    let atKill = 0;
    for (let i = 0; i < 4000 && atKill === 0; i++) {
      atKill = (await api.get('/api/v1/playbooks?limit=1')).body.total;
      if (atKill === 0) await sleep(2);
    }
    await server.kill('SIGKILL');
    // The kill landed while the reactor was firing, not before it started or after it finished.
    expect(atKill).toBeGreaterThan(0);
    expect(atKill).toBeLessThan(CLIENTS);

    server = await spawnServer({ DATA_DIR: dataDir });
    api = client(server.url, key);
    let total = 0;
    for (let i = 0; i < 600 && total < CLIENTS; i++) {
      total = (await api.get('/api/v1/playbooks?limit=1')).body.total;
      if (total < CLIENTS) await sleep(100);
    }
    // Task counts are roll-ups, appended by their own reactor once the tasks are in: wait for them.
    let playbooks: { client: { id: string }; triggerKey: string; taskCount: number }[] = [];
    for (let i = 0; i < 300; i++) {
      playbooks = [];
      for (let offset = 0; offset < CLIENTS + 100; offset += 1000) {
        playbooks.push(...(await api.get(`/api/v1/playbooks?limit=1000&offset=${offset}`)).body.data);
      }
      if (playbooks.every((playbook) => playbook.taskCount === 3)) break;
      await sleep(100);
    }
    expect(playbooks).toHaveLength(CLIENTS);
    expect(new Set(playbooks.map((playbook) => playbook.client.id)).size).toBe(CLIENTS);
    expect(new Set(playbooks.map((playbook) => playbook.triggerKey)).size).toBe(CLIENTS);
    expect(playbooks.every((playbook) => playbook.taskCount === 3)).toBe(true);
    expect((await api.get('/api/v1/playbookSteps?limit=1')).body.total).toBe(2 * CLIENTS);
    expect((await api.get('/api/v1/tasks?limit=1')).body.total).toBe(3 * CLIENTS);
    const runs = await csr.json<{ status: string; triggerKey: string }[]>('automation', 'runs', '--workspace', 'crash', '--limit', '10000');
    const fired = runs.filter((run) => run.status === 'fired');
    expect(fired).toHaveLength(CLIENTS);
    expect(new Set(fired.map((run) => run.triggerKey)).size).toBe(CLIENTS);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey } from '../support/ops.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';

/** PRODUCT.md section 4, "nothing lost": kill -9 mid-load, restart, every acknowledged record is there. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-durability-'));
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('durability', () => {
  it('finds every acknowledged record after SIGKILL during a write load', async () => {
    const key = await createKey(dataDir);
    server = await spawnServer({ DATA_DIR: dataDir });
    const api = client(server.url, key);
    const acknowledged: { id: string; name: string }[] = [];
    let killed = false;

    const writer = async (worker: number) => {
      for (let i = 0; !killed; i++) {
        const name = `Durable ${worker}-${i}`;
        try {
          const response = await api.post('/api/v1/clients', { name });
          if (response.status === 201) acknowledged.push({ id: response.body.ids[0], name });
        } catch {
          return; // the connection died with the server: that request was never acknowledged
        }
      }
    };
    const writers = Array.from({ length: 16 }, (_, worker) => writer(worker));
    while (acknowledged.length < 300) await new Promise((resolve) => setTimeout(resolve, 5));
    killed = true;
    await server.kill('SIGKILL');
    await Promise.all(writers);

    server = await spawnServer({ DATA_DIR: dataDir });
    const after = client(server.url, key);
    const listed = await after.get('/api/v1/clients?limit=1000');
    const byId = new Map<string, string>(listed.body.data.map((record: any) => [record.id, record.name]));
    expect(listed.body.total).toBeGreaterThanOrEqual(acknowledged.length);
    for (const { id, name } of acknowledged) expect(byId.get(id)).toBe(name);
    const numbers = listed.body.data.map((record: any) => record.clientNumber);
    expect(new Set(numbers).size).toBe(numbers.length);
  }, 60_000);
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey } from '../support/ops.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client, type ApiClient } from '../support/service.js';

/**
 * Issue 39 item 2: creates in flight when the server is killed must not leave numbers taken
 * without a record. Single creates and large upserts run together, the server is killed with
 * SIGKILL, and after a restart the clients' numbers are 1..N with no hole, and the next create
 * takes N + 1 (README: gap-free numbers).
 */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-numbers-crash-'));
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

async function allNumbers(api: ApiClient): Promise<number[]> {
  const numbers: number[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await api.get(`/api/v1/clients?limit=1000&offset=${offset}`);
    expect(page.status).toBe(200);
    for (const record of page.body.data) numbers.push(Number(String(record.clientNumber).replace(/^\D+/, '')));
    if (offset + 1000 >= page.body.total) return numbers.sort((a, b) => a - b);
  }
}

describe('auto numbers after a crash', () => {
  it('leaves no number without its record when the server is killed under creates and upserts', async () => {
    const key = await createKey(dataDir);
    server = await spawnServer({ DATA_DIR: dataDir });
    const api = client(server.url, key);
    let acknowledged = 0;
    let killed = false;

    const single = async (worker: number) => {
      for (let i = 0; !killed; i++) {
        try {
          const response = await api.post('/api/v1/clients', { name: `Crash ${worker}-${i}` });
          if (response.status === 201) acknowledged++;
        } catch {
          return; // the connection died with the server
        }
      }
    };
    const bulk = async (worker: number) => {
      for (let i = 0; !killed; i++) {
        const records = Array.from({ length: 900 }, (_, n) => ({ name: `Bulk ${worker}-${i}-${n}` }));
        try {
          const response = await api.post('/api/v1/clients', records);
          if (response.status === 201) acknowledged += 900;
        } catch {
          return;
        }
      }
    };
    const writers = [...Array.from({ length: 12 }, (_, w) => single(w)), bulk(0), bulk(1)];
    while (acknowledged < 2500) await new Promise((resolve) => setTimeout(resolve, 5));
    killed = true;
    await server.kill('SIGKILL');
    await Promise.all(writers);

    server = await spawnServer({ DATA_DIR: dataDir });
    const after = client(server.url, key);
    // Its answer waits for the read model to show it, and so everything written before it.
    const next = await after.post('/api/v1/clients', { name: 'After the crash' });
    expect(next.status).toBe(201);
    const numbers = await allNumbers(after);
    expect(numbers.length).toBeGreaterThanOrEqual(acknowledged + 1);
    const holes = numbers.filter((n, i) => n !== i + 1);
    expect(holes.slice(0, 5), `numbers with a hole before them, of ${numbers.length}`).toEqual([]);
    const created = await after.record('clients', next.body.ids[0]);
    expect(Number(String(created.clientNumber).replace(/^\D+/, ''))).toBe(numbers.length);
  }, 120_000);
});

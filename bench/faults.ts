import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { csr } from './http.js';
import { EMPTY_OBJECTS, largeBodyBench, NUMBERS, UPSERTS } from './largeBodies.js';
import { longStreamBench } from './longStreams.js';
import type { TextRow } from './measure.js';
import { spawnServer, stop } from './servers.js';

/** Issue 22's faults: long streams and large bodies, each on a store of its own (`BENCH_FAULTS=long|large` for one); large bodies of three kinds: upserts, huge arrays of numbers and of `{}`. */
export async function faultsBench(): Promise<TextRow[]> {
  const rows: TextRow[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-faults-'));
  const workspaceId = csr(dataDir, 'workspaces', 'create', 'faults').id as string;
  const key = csr(dataDir, 'keys', 'create', '--workspace', 'faults', '--name', 'bench').key as string;
  const startServer = async () => {
    const server = await spawnServer('dist/src/main.js', { DATA_DIR: dataDir });
    return { url: server.url, pid: server.child.pid!, stop: () => stop(server.child) };
  };
  if (process.env['BENCH_FAULTS'] !== 'large') rows.push(await longStreamBench({ dataDir, workspaceId, key, startServer }));
  if (process.env['BENCH_FAULTS'] !== 'long') {
    for (const load of [UPSERTS, NUMBERS, EMPTY_OBJECTS]) rows.push(await largeBodyBench({ key, startServer }, load));
  }
  rmSync(dataDir, { recursive: true, force: true });
  return rows;
}

import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDirectory } from '../core/makeDirectory.js';
import { processAlive } from '../core/processAlive.js';

/**
 * Which servers run on an embedded DATA_DIR: each server process writes `servers/<pid>` at start
 * and removes it when it stops. A file left by a killed server names a pid that is gone, so it
 * does not count. `csr restore` refuses while any listed server runs.
 */

const DIR = 'servers';

export function announceServer(dataDir: string): { withdraw(): void } {
  const dir = join(dataDir, DIR);
  makeDirectory(dir);
  const file = join(dir, String(process.pid));
  writeFileSync(file, `${process.pid}\n`);
  return { withdraw: () => rmSync(file, { force: true }) };
}

/** The pids of the servers running on `dataDir` (stale files of killed servers are removed). */
export function runningServers(dataDir: string): number[] {
  const dir = join(dataDir, DIR);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const running: number[] = [];
  for (const name of names) {
    const pid = Number(name);
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) running.push(pid);
    else if (Number.isSafeInteger(pid)) rmSync(join(dir, name), { force: true });
  }
  return running;
}

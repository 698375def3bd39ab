import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { percentile, type TextRow } from './measure.js';
import { writeClients } from './readStoreWrites.js';
import { root } from './servers.js';

/**
 * The instructions the embedded read store executes to write a created client (its document,
 * filter rows and counts, looked up first as the projector does; readStoreWrites.ts), counted by
 * valgrind's callgrind: `BENCH_ONLY=instructions` (only when named). These VMs give no hardware
 * counters to perf, and on a busy day CPU time moved more from one round to the next than a small
 * change to the read store's writes does; an instruction count barely moves between runs of one
 * build (only with the JIT's timing; docs/performance.md, session 38). Each count is a run that
 * writes BENCH_INSTRUCTIONS_DOCUMENTS (default 2,000) less one that writes none, both on a copy of
 * a store of BENCH_INSTRUCTIONS_PREFILL clients (default 100,000) that this checkout wrote. With
 * BENCH_INSTRUCTIONS_AGAINST=<another checkout, built> that checkout runs the same, run after run
 * (BENCH_INSTRUCTIONS_RUNS, default 2); it must read this checkout's layout. Needs valgrind
 * (`apt-get install valgrind`); without it the row says so.
 */

const PREFILL = Number(process.env['BENCH_INSTRUCTIONS_PREFILL'] ?? 100_000);
const DOCUMENTS = Number(process.env['BENCH_INSTRUCTIONS_DOCUMENTS'] ?? 2_000);
const RUNS = Number(process.env['BENCH_INSTRUCTIONS_RUNS'] ?? 2);

const SCENARIO = 'embedded read store, instructions per created client written (looked up, then put; 25 per transaction)';

/** The instructions callgrind counted, from the summary it writes to stderr ("==123== Collected : 1438769878"). */
export function collectedInstructions(stderr: string): number | null {
  const match = /^==\d+== Collected : (\d+)$/m.exec(stderr);
  return match ? Number(match[1]) : null;
}

export function valgrindAvailable(): boolean {
  try {
    return spawnSync('valgrind', ['--version'], { stdio: 'ignore' }).status === 0;
  } catch {
    return false;
  }
}

/**
 * Instructions of a process writing `count` clients from `first` into a copy of `store` with
 * `checkout`'s read store; the writer is the one `project` built (dist/bench/readStoreWrites.js).
 */
export function countInstructions(checkout: string, store: string, first: number, count: number, project = root): number {
  const copy = `${store}-copy`;
  copyFileSync(store, copy);
  try {
    const child = spawnSync(
      'valgrind',
      // V8 writes the code it runs into memory it allocated: valgrind must look for such code there.
      ['--tool=callgrind', '--callgrind-out-file=/dev/null', '--smc-check=all-non-file', process.execPath, join(project, 'dist/bench/readStoreWrites.js'), checkout, copy, String(first), String(count)],
      // Without the extra CA certificates a machine may name: node parses them at its start, which
      // is not what is measured and under valgrind takes longer than the writes.
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_EXTRA_CA_CERTS')) },
    );
    const instructions = collectedInstructions(child.stderr);
    if (child.status !== 0 || instructions === null) throw new Error(`the counted writes failed (${child.status}): ${child.stderr.slice(-500)}`);
    return instructions;
  } finally {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${copy}${suffix}`, { force: true });
  }
}

export async function readStoreInstructionsBench(): Promise<TextRow[]> {
  if (!valgrindAvailable()) return [{ scenario: SCENARIO, result: 'skipped: valgrind is not installed (apt-get install valgrind)', target: '-' }];
  const against = process.env['BENCH_INSTRUCTIONS_AGAINST'];
  const builds = [{ name: 'this checkout', checkout: root }, ...(against ? [{ name: resolve(against), checkout: resolve(against) }] : [])];
  const perDocument = new Map(builds.map((build) => [build.name, [] as number[]]));
  const dir = mkdtempSync(join(tmpdir(), 'csr-bench-instructions-'));
  try {
    const store = join(dir, 'read.db');
    await writeClients(root, store, 0, PREFILL);
    for (let run = 0; run < RUNS; run++) {
      for (const build of run % 2 === 0 ? builds : [...builds].reverse()) {
        const without = countInstructions(build.checkout, store, PREFILL, 0);
        const written = countInstructions(build.checkout, store, PREFILL, DOCUMENTS);
        perDocument.get(build.name)!.push((written - without) / DOCUMENTS);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return builds.map((build) => {
    const counts = perDocument.get(build.name)!;
    const thousands = (value: number) => `${(value / 1000).toFixed(1)}k`;
    return {
      scenario: `${SCENARIO}, after ${PREFILL.toLocaleString('en')}: ${build.name}`,
      result: `median ${thousands(percentile(counts, 50))} instructions (runs: ${counts.map(thousands).join(', ')})`,
      target: '-',
    };
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await readStoreInstructionsBench()) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
}

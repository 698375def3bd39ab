import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { treeCpuMs } from './cpu.js';
import { csrOf, INDUSTRIES } from './http.js';
import { percentile, type TextRow } from './measure.js';
import { root, spawnServer, stop } from './servers.js';

/**
 * A 1,000-record upsert on the embedded store, alone (issue 44: p50 <= 150 ms): a fresh server with
 * every role, UPSERTS requests of 1,000 new clients one after the other, the first WARMUP not
 * counted (a fresh server's V8 is still compiling), each timed from request to answer, with the
 * server's CPU from its start to SETTLE_MS after its answer (the followers' share included). With
 * BENCH_UPSERT_AGAINST=<another checkout, built>, that build's server runs the same load, the builds
 * alternating run after run, each on a fresh store: a change is compared on a machine whose speed
 * drifts (docs/performance.md, "upserts in slices").
 */

const UPSERTS = Number(process.env['BENCH_UPSERT_RUNS'] ?? 35);
const ROUNDS = Number(process.env['BENCH_UPSERT_ROUNDS'] ?? 2);
const WARMUP = 5;
const RECORDS = 1_000;
const SETTLE_MS = 300;

interface Build {
  name: string;
  checkout: string;
  /** Per run: the counted upserts' p50 of ms and of the server's CPU ms. */
  runs: { ms: number; cpuMs: number | null }[];
}

async function oneRun(build: Build, run: number): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-upsert-'));
  try {
    csrOf(build.checkout, { DATA_DIR: dataDir }, 'workspaces', 'create', 'upsert');
    const key = csrOf(build.checkout, { DATA_DIR: dataDir }, 'keys', 'create', '--workspace', 'upsert', '--name', 'bench').key as string;
    const { url, child } = await spawnServer('dist/src/main.js', { DATA_DIR: dataDir }, build.checkout);
    try {
      const ms: number[] = [];
      const cpuMs: number[] = [];
      for (let upsert = 0; upsert < WARMUP + UPSERTS; upsert++) {
        const body = JSON.stringify(
          Array.from({ length: RECORDS }, (_, i) => ({ name: `Upsert ${run}-${upsert}-${i}`, industry: INDUSTRIES[i % INDUSTRIES.length], arr: i })),
        );
        const cpuBefore = treeCpuMs(child.pid!);
        const started = performance.now();
        const response = await fetch(`${url}/api/v1/clients`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
        await response.arrayBuffer();
        const elapsed = performance.now() - started;
        if (response.status !== 201) throw new Error(`${build.name}: upsert answered ${response.status}`);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        const cpuAfter = treeCpuMs(child.pid!);
        if (upsert < WARMUP) continue;
        ms.push(elapsed);
        if (cpuBefore !== null && cpuAfter !== null) cpuMs.push(cpuAfter - cpuBefore);
      }
      build.runs.push({ ms: percentile(ms, 50), cpuMs: cpuMs.length > 0 ? percentile(cpuMs, 50) : null });
    } finally {
      await stop(child);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function upsertCostBench(): Promise<TextRow[]> {
  const against = process.env['BENCH_UPSERT_AGAINST'];
  const builds: Build[] = [{ name: 'this checkout', checkout: root, runs: [] }, ...(against ? [{ name: resolve(against), checkout: resolve(against), runs: [] }] : [])];
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in the other order: neither build always runs first.
    for (const build of round % 2 === 0 ? builds : [...builds].reverse()) await oneRun(build, round);
  }
  return builds.map((build) => ({
    scenario: `embedded: ${RECORDS.toLocaleString('en')}-record upsert of new clients, p50 of ${UPSERTS} after ${WARMUP}, a fresh store per run: ${build.name}`,
    result:
      `p50 ${build.runs.map((run) => run.ms.toFixed(0)).join(', ')} ms` +
      (build.runs.every((run) => run.cpuMs !== null) ? `; server CPU per upsert ${build.runs.map((run) => run.cpuMs!.toFixed(0)).join(', ')} ms` : ''),
    target: '<= 150 ms',
  }));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await upsertCostBench()) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
}

import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { csr } from './http.js';
import { load, percentile, type TextRow } from './measure.js';
import { root, spawnServer, stop } from './servers.js';

/**
 * Issue 26's closing note: `csr import` of a clients file (BENCH_IMPORT_ROWS, default 100,000),
 * its rows/s and peak RSS, beside the POST rates of the same run: POST one record under wrk and
 * 1,000-record POSTs (the import's batch size), each on a fresh store of its own. The import runs
 * as an operator runs it, with no server (the tool projects what it writes).
 */

const ROWS = Number(process.env['BENCH_IMPORT_ROWS'] ?? 100_000);
const BATCHES = 20;
const INDUSTRIES = ['Retail', 'Tech', 'Health', 'Finance', 'Energy'];

function freshStore(): { dataDir: string; key: string } {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-import-'));
  csr(dataDir, 'workspaces', 'create', 'imports');
  return { dataDir, key: csr(dataDir, 'keys', 'create', '--workspace', 'imports', '--name', 'bench').key as string };
}

async function writeCsv(path: string): Promise<void> {
  const out = createWriteStream(path);
  out.write('name,industry,website\n');
  for (let i = 0; i < ROWS; i++) {
    if (!out.write(`Imported ${i},${INDUSTRIES[i % INDUSTRIES.length]},https://imported-${i}.example\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** The import's wall time and its process's peak RSS (sampled from /proc). */
async function runImport(dataDir: string, file: string): Promise<{ seconds: number; peakRssMiB: number; created: number; errors: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, ['bin/csr', 'import', 'clients', file, '--workspace', 'imports', '--json'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  let peakRssMiB = 0;
  const sampler = setInterval(() => {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (match) peakRssMiB = Math.max(peakRssMiB, Number(match[1]) / 1024);
    } catch {
      // the process has just ended
    }
  }, 50);
  const [code] = (await once(child, 'exit')) as [number];
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0 && code !== 1) throw new Error(`csr import exited with ${code}`);
  const result = JSON.parse(stdout) as { created: number; errors: unknown[] };
  return { seconds, peakRssMiB, created: result.created, errors: result.errors.length };
}

export async function importBench(options: { durationS: number; warmUpS: number }): Promise<TextRow[]> {
  // POST one record (wrk, 32 connections), then 1,000-record POSTs one after another.
  const posting = freshStore();
  const server = await spawnServer('dist/src/main.js', { DATA_DIR: posting.dataDir });
  const headers = { authorization: `Bearer ${posting.key}`, 'content-type': 'application/json' };
  let postOne: number;
  const batchMs: number[] = [];
  try {
    const postLoad = (durationS: number) => ({
      url: server.url,
      headers,
      prelude: 'counter = 0',
      request: `request = function()
        counter = counter + 1
        return wrk.format("POST", "/api/v1/clients", nil, '{"name":"Posted ${durationS}-' .. counter .. '","industry":"Bench"}')
      end`,
      durationS,
    });
    // A fresh server's V8 is still compiling its hot paths: an unmeasured warm-up first, as in http.ts.
    if (options.warmUpS > 0) await load('POST one (import bench, warm-up)', server.child, postLoad(options.warmUpS));
    postOne = (await load('POST one (import bench)', server.child, postLoad(options.durationS))).requestsPerSecond;
    for (let batch = 0; batch < BATCHES; batch++) {
      const body = JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ name: `Batch ${batch}-${i}`, industry: INDUSTRIES[i % INDUSTRIES.length], website: `https://batch-${batch}-${i}.example` })));
      const started = performance.now();
      const response = await fetch(`${server.url}/api/v1/clients`, { method: 'POST', headers, body });
      await response.arrayBuffer();
      if (response.status !== 201) throw new Error(`1,000-record POST failed: ${response.status}`);
      batchMs.push(performance.now() - started);
    }
  } finally {
    await stop(server.child);
    rmSync(posting.dataDir, { recursive: true, force: true });
  }
  const batchRate = 1000 / (percentile(batchMs, 50) / 1000);

  const importing = freshStore();
  try {
    const file = join(importing.dataDir, 'clients.csv');
    await writeCsv(file);
    const run = await runImport(importing.dataDir, file);
    if (run.created !== ROWS || run.errors !== 0) throw new Error(`the import created ${run.created} of ${ROWS} rows with ${run.errors} errors`);
    const rate = ROWS / run.seconds;
    const n = (value: number) => Math.round(value).toLocaleString('en');
    return [
      {
        scenario: `csr import of a ${n(ROWS)}-row clients CSV (no server running), beside POST on a fresh store of the same run`,
        result: `${n(rate)} rows/s (${run.seconds.toFixed(1)} s), peak RSS ${n(run.peakRssMiB)} MiB; POST one record ${n(postOne)} records/s (import ${(rate / postOne).toFixed(2)}x); 1,000-record POST p50 ${percentile(batchMs, 50).toFixed(0)} ms = ${n(batchRate)} records/s (import ${(rate / batchRate).toFixed(2)}x)`,
        target: 'reported (issue 26 sets no figure)',
      },
    ];
  } finally {
    rmSync(importing.dataDir, { recursive: true, force: true });
  }
}

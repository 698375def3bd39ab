import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { formatPosition } from '../src/eventstore/position.js';
import type { FindQuery, ReadStore, RecordDocument } from '../src/readstore/port.js';
import { STILL_MS } from '../src/readstore/sqlite/readConnections.js';
import { INDUSTRIES } from './http.js';
import { percentile, type TextRow } from './measure.js';
import { root } from './servers.js';

/**
 * The embedded read store alone: the CPU of writing a created client's document (its row, filter
 * rows and counts; BATCH per transaction, as the projector commits concurrent creates) and of
 * the bench's list (100 of one industry, with the total), on a store that already holds PREFILL
 * documents. One thread, no log, no HTTP: a change to the read store is measured without the
 * rest. With BENCH_READSTORE_AGAINST=<another checkout, built>, that checkout's store runs in the
 * same process, its rounds alternating with this one's (docs/performance.md, "integer positions").
 */

const PREFILL = Number(process.env['BENCH_READSTORE_PREFILL'] ?? 100_000);
const ROUNDS = Number(process.env['BENCH_READSTORE_ROUNDS'] ?? 6);
const PER_ROUND = Number(process.env['BENCH_READSTORE_DOCUMENTS'] ?? 2_000);
const LISTS = 1_000;
const BATCH = 25;
const LIST: FindQuery = { workspaceId: 'bench', object: 'clients', filters: [{ field: 'industry', value: 'retail' }], limit: 100, offset: 0 };

type Open = (options: { path: string; batchThread?: boolean }) => ReadStore;

interface Build {
  name: string;
  store: ReadStore;
  dir: string;
  putMicroseconds: number[];
  listMicroseconds: number[];
}

/** Client n as the projector writes it: every log position of the embedded log is `n:n`, four apart per create. */
export function client(n: number): RecordDocument {
  const at = new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
  const name = `Single bench ${n}`;
  const industry = INDUSTRIES[n % INDUSTRIES.length]!;
  const number = `CL-${String(n).padStart(5, '0')}`;
  return {
    workspaceId: 'bench',
    object: 'clients',
    id: `01a21359-faad-788c-9942-${String(n).padStart(12, '0')}`,
    name,
    fields: { name, industry, clientNumber: number, status: 'active' },
    calculated: { healthScore: 50 },
    createdAt: at,
    updatedAt: at,
    createdPosition: formatPosition(BigInt(n * 4 + 1)),
    revision: 0,
    rendered: `shape\u0001{"id":"${n}","name":"${name}","industry":"${industry}","clientNumber":"${number}"}`,
  };
}

async function put(store: ReadStore, from: number, count: number): Promise<void> {
  for (let done = 0; done < count; done += BATCH) {
    const documents = Array.from({ length: Math.min(BATCH, count - done) }, (_, i) => client(from + done + i));
    await store.transaction(async (tx) => {
      await tx.putMany(documents);
      await tx.setCheckpoint('records', documents.at(-1)!.createdPosition);
    });
  }
}

/** Lists run on a still file, as the HTTP bench's do: reads under commits take the unmapped connection (readConnections.ts). */
const pauseForStill = () => new Promise((resolve) => setTimeout(resolve, 2 * STILL_MS));

async function list(store: ReadStore, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await store.findStored({ ...LIST, offset: (i % 20) * 100 }, 'shape');
}

/** The embedded read store of another built checkout (or this one), on the file `path`, its batches on the calling thread. */
export async function openCheckoutStore(checkout: string, path: string): Promise<ReadStore> {
  const module = (await import(pathToFileURL(join(checkout, 'dist/src/readstore/sqlite/index.js')).href)) as { openSqliteReadStore: Open };
  return module.openSqliteReadStore({ path, batchThread: false });
}

async function openBuild(name: string, checkout: string): Promise<Build> {
  const dir = mkdtempSync(join(tmpdir(), 'csr-bench-readstore-'));
  return { name, store: await openCheckoutStore(checkout, join(dir, 'read.db')), dir, putMicroseconds: [], listMicroseconds: [] };
}

function cpuMicroseconds(work: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  return work().then(() => {
    const { user, system } = process.cpuUsage(before);
    return user + system;
  });
}

export async function readStoreCostBench(): Promise<TextRow[]> {
  const against = process.env['BENCH_READSTORE_AGAINST'];
  const builds = [await openBuild('this checkout', root), ...(against ? [await openBuild(resolve(against), resolve(against))] : [])];
  try {
    for (const build of builds) {
      await put(build.store, 0, PREFILL);
      await pauseForStill();
      await list(build.store, LISTS / 5);
    }
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in the other order: neither build always runs first after a pause.
      for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
        build.putMicroseconds.push((await cpuMicroseconds(() => put(build.store, PREFILL + round * PER_ROUND, PER_ROUND))) / PER_ROUND);
        await pauseForStill();
        build.listMicroseconds.push((await cpuMicroseconds(() => list(build.store, LISTS))) / LISTS);
      }
    }
  } finally {
    for (const build of builds) {
      await build.store.close();
      rmSync(build.dir, { recursive: true, force: true });
    }
  }
  const rounds = (values: number[]) => `median ${percentile(values, 50).toFixed(1)} µs (rounds: ${values.map((us) => us.toFixed(1)).join(', ')})`;
  return builds.flatMap((build) => [
    {
      scenario: `embedded read store, CPU per created client written (${BATCH} per transaction) after ${PREFILL.toLocaleString('en')}: ${build.name}`,
      result: rounds(build.putMicroseconds),
      target: '-',
    },
    { scenario: `embedded read store, CPU per list of 100 of one industry, with the total: ${build.name}`, result: rounds(build.listMicroseconds), target: '-' },
  ]);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await readStoreCostBench()) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
}

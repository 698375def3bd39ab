import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { reservationStream, type ReservationKey } from '../commands/reservations/keys.js';
import { recordStream } from '../src/events/records.js';
import type { AppendGroup, EventMetadata, EventStore } from '../src/eventstore/port.js';
import { percentile, type TextRow } from './measure.js';
import { root } from './servers.js';

/**
 * The embedded log's CPU per create, alone: what a create appends (its record and the claims of
 * its name and its number's value, in one group) in commits of COMMIT_SIZE concurrent creates, on
 * a log that already holds PREFILL of them, so an index that grows with the store shows. One
 * thread, no HTTP and no followers: a change to the append path is measured without the noise of
 * the rest. With BENCH_APPEND_AGAINST=<another checkout, built>, that checkout's store runs in the
 * same process, its rounds alternating with this one's: the machine's drift falls on both alike,
 * and the medians compare two builds (docs/performance.md, "the claims index").
 */

const PREFILL = Number(process.env['BENCH_APPEND_PREFILL'] ?? 100_000);
const ROUNDS = Number(process.env['BENCH_APPEND_ROUNDS'] ?? 8);
const PER_ROUND = Number(process.env['BENCH_APPEND_CREATES'] ?? 2_000);
const COMMIT_SIZE = 10;

type Open = (options: { path: string }) => EventStore;

interface Build {
  name: string;
  store: EventStore;
  dir: string;
  microseconds: number[];
}

const metadata: EventMetadata = { source: 'api', actor: { type: 'apiKey', id: randomUUID(), name: 'bench' }, actionId: randomUUID(), correlationId: randomUUID(), causationId: randomUUID() };

/** Create number `n`'s appends: the claims of its name and its number's value, on the streams reservations use, then its record. */
function createAppends(workspaceId: string, n: number): AppendGroup {
  const recordId = randomUUID();
  const fields = { name: `Loaded ${n}`, industry: 'Retail', clientNumber: `CL-${n}` };
  const claim = (key: ReservationKey) => ({
    stream: reservationStream(workspaceId, 'clients', key),
    events: [{ id: randomUUID(), type: 'ReservationClaimed', data: { schemaVersion: 1, workspaceId, object: 'clients', recordId, key }, metadata }],
    expectedRevision: 'no_stream' as const,
  });
  const record = { stream: recordStream(recordId), events: [{ id: randomUUID(), type: 'RecordCreated', data: { schemaVersion: 1, workspaceId, object: 'clients', recordId, fields }, metadata }], expectedRevision: 'no_stream' as const };
  return [claim({ kind: 'name', fields: ['name'], values: [fields.name.toLowerCase()] }), claim({ kind: 'fields', fields: ['clientNumber'], values: [fields.clientNumber.toLowerCase()] }), record];
}

async function appendCreates(store: EventStore, workspaceId: string, from: number, count: number): Promise<void> {
  for (let done = 0; done < count; done += COMMIT_SIZE) {
    await Promise.all(Array.from({ length: Math.min(COMMIT_SIZE, count - done) }, (_, i) => store.appendThen(createAppends(workspaceId, from + done + i), [])));
  }
}

async function openBuild(name: string, checkout: string): Promise<Build> {
  const module = (await import(pathToFileURL(join(checkout, 'dist/src/eventstore/sqlite/index.js')).href)) as { openSqliteEventStore: Open };
  const dir = mkdtempSync(join(tmpdir(), 'csr-bench-append-'));
  return { name, store: module.openSqliteEventStore({ path: join(dir, 'events.db') }), dir, microseconds: [] };
}

export async function appendCostBench(): Promise<TextRow[]> {
  const against = process.env['BENCH_APPEND_AGAINST'];
  const builds = [await openBuild('this checkout', root), ...(against ? [await openBuild(resolve(against), resolve(against))] : [])];
  const workspaceId = randomUUID();
  try {
    for (const build of builds) await appendCreates(build.store, workspaceId, 0, PREFILL);
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in the other order: neither build always runs first after a pause.
      for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
        const before = process.cpuUsage();
        await appendCreates(build.store, workspaceId, PREFILL + round * PER_ROUND, PER_ROUND);
        const { user, system } = process.cpuUsage(before);
        build.microseconds.push((user + system) / PER_ROUND);
      }
    }
  } finally {
    for (const build of builds) {
      await build.store.close();
      rmSync(build.dir, { recursive: true, force: true });
    }
  }
  return builds.map((build) => ({
    scenario: `embedded log, CPU per create (a record and two claims, ${COMMIT_SIZE} per commit) after ${PREFILL.toLocaleString('en')}: ${build.name}`,
    result: `median ${percentile(build.microseconds, 50).toFixed(0)} µs (rounds of ${PER_ROUND.toLocaleString('en')}: ${build.microseconds.map((us) => us.toFixed(0)).join(', ')})`,
    target: '-',
  }));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of await appendCostBench()) console.log(`| ${row.scenario} | ${row.result} | ${row.target} |`);
}

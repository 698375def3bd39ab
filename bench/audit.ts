import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { exportEvents } from '../queries/auditExport.js';
import { verifyAudit } from '../queries/auditVerify.js';
import { loadConfig } from '../src/config.js';
import { recordStream } from '../src/events/records.js';
import type { EventMetadata, EventStore, NewEvent, RecordedEvent } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { RECORDS_PROJECTION } from '../src/readstore/port.js';
import { startService } from '../src/service.js';
import { fingerprint, generateApiKey } from '../src/setup/apiKeys.js';

/**
 * The auditors' figures (issue 23) on one log of AUDIT_EVENTS events: the history of a record
 * with 1,000 revisions, a GET as of a moment (an invoice with 50 lines changed over time), and
 * the rates of export and verify next to the raw log read rate measured in the same run (the
 * goal: at least half of it), plus the peak RSS of `csr audit export` as a child process.
 */

const EVENTS = Number(process.env['BENCH_AUDIT_EVENTS'] ?? 200_000);
const PAGE = 2000;

export interface AuditRow {
  scenario: string;
  result: string;
  target: string;
}

const metadata = (): EventMetadata => {
  const actionId = randomUUID();
  return { source: 'api', actor: { type: 'apiKey', id: 'bench', name: 'bench key' }, actionId, correlationId: actionId, causationId: actionId };
};
const created = (workspaceId: string, object: string, recordId: string, fields: Record<string, unknown>): NewEvent => ({
  id: randomUUID(),
  type: 'RecordCreated',
  data: { schemaVersion: 1, workspaceId, object, recordId, fields },
  metadata: metadata(),
});
const updated = (workspaceId: string, object: string, recordId: string, changes: Record<string, { from: unknown; to: unknown }>): NewEvent => ({
  id: randomUUID(),
  type: 'RecordUpdated',
  data: { schemaVersion: 1, workspaceId, object, recordId, changes },
  metadata: metadata(),
});

/** Appends many streams' events concurrently (the store's group commit shares the fsyncs). */
async function appendAll(events: EventStore, appends: Array<[string, NewEvent]>): Promise<void> {
  for (let i = 0; i < appends.length; i += 1000) {
    await Promise.all(appends.slice(i, i + 1000).map(([stream, event]) => events.append(stream, [event], { expectedRevision: 'any' })));
  }
}

const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;

async function timed(times: number, work: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

export async function auditBench(root: string): Promise<AuditRow[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-audit-'));
  const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', ROLES: 'api,projector', LOG_LEVEL: 'warn' });
  const service = await startService(config, pino({ level: 'warn' }));
  const { events, readStore, setup } = service.backends;
  const workspaceId = randomUUID();
  const slug = `audit-${workspaceId.slice(0, 8)}`;
  await setup.createWorkspace({ id: workspaceId, slug, name: slug, createdAt: new Date().toISOString() });
  const key = generateApiKey();
  await setup.createKey({ id: randomUUID(), workspaceId, name: 'bench', fingerprint: fingerprint(key), access: 'read-only', objects: 'all', createdAt: new Date().toISOString(), lastUsedAt: null, revokedAt: null });

  // One client with 1,000 revisions, an invoice of it with 50 lines each changed twice, then plain clients.
  const client = randomUUID();
  const invoice = randomUUID();
  await appendAll(events, [[recordStream(client), created(workspaceId, 'clients', client, { name: 'History' })]]);
  await appendAll(events, Array.from({ length: 999 }, (_, i) => [recordStream(client), updated(workspaceId, 'clients', client, { notes: { from: i === 0 ? null : `rev ${i}`, to: `rev ${i + 1}` } })]));
  await appendAll(events, [[recordStream(invoice), created(workspaceId, 'billing', invoice, { client, status: 'Sent' })]]);
  const lines = Array.from({ length: 50 }, () => randomUUID());
  await appendAll(events, lines.map((line, i) => [recordStream(line), created(workspaceId, 'invoiceLines', line, { invoice, description: `Line ${i}`, quantity: 1, unitPrice: 10 })]));
  const middle = new Date().toISOString();
  for (const round of [1, 2]) {
    await appendAll(events, lines.map((line) => [recordStream(line), updated(workspaceId, 'invoiceLines', line, { quantity: { from: round, to: round + 1 } })]));
  }
  let written = 1000 + 1 + 50 + 100;
  for (let n = 0; written < EVENTS; n++) {
    const batch: Array<[string, NewEvent]> = [];
    for (let i = 0; i < 500 && written < EVENTS; i++, written += 4) {
      const id = randomUUID();
      batch.push([recordStream(id), created(workspaceId, 'clients', id, { name: `Client ${n}-${i}`, tier: 'SMB' })]);
      for (let r = 0; r < 3; r++) batch.push([recordStream(id), updated(workspaceId, 'clients', id, { arr: { from: r === 0 ? null : r, to: r + 1 } })]);
    }
    await appendAll(events, batch);
  }
  // The reactors go on appending after the load (a health score per new client): the rates below
  // are measured once the log has stopped growing and the read model has caught up with it, so
  // that no run measures the projector's work beside its own.
  for (let head = (await events.headPosition())!, settled = false; !settled; ) {
    await readStore.waitForCheckpoint(RECORDS_PROJECTION, head, 600_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = (await events.headPosition())!;
    settled = now === head;
    head = now;
  }

  const api = (path: string) => fetch(`${service.url}${path}`, { headers: { Authorization: `Bearer ${key}` } }).then((response) => response.json());
  const historyMs = await timed(5, () => api(`/api/v1/clients/${client}/history?limit=1000`));
  const asOfMs = await timed(20, () => api(`/api/v1/billing/${invoice}?as_of=${middle}`));

  const rate = async (work: () => Promise<number>) => {
    const started = performance.now();
    const count = await work();
    return Math.round(count / ((performance.now() - started) / 1000));
  };
  const raw = await rate(async () => {
    let count = 0;
    for (let from: Position | 'start' = 'start'; ; ) {
      const page: RecordedEvent[] = await events.readAll({ from, maxCount: PAGE });
      if (page.length === 0) return count;
      count += page.length;
      from = page.at(-1)!.position;
    }
  });
  const exported = await rate(async () => {
    let count = 0;
    let bytes = 0;
    for await (const page of exportEvents(events, { workspaceId })) {
      for (const line of page) bytes += JSON.stringify(line).length + 1;
      count += page.length;
    }
    return bytes > 0 ? count : 0;
  });
  let verified = { ok: false, events: 0 };
  // As `csr audit verify` runs it: the log pass and the read model check interleaved on one thread.
  const verifyRate = await rate(async () => (verified = await verifyAudit({ events, readStore, setup })).events);
  await service.stop();

  // `csr audit export` and `csr audit verify` as an operator runs them, into /dev/null: peak RSS (kB, from GNU time).
  const peakMiBOf = (...args: string[]) => {
    const timeOutput = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, 'bin/csr', 'audit', ...args], {
      cwd: root,
      env: { ...process.env, DATA_DIR: dataDir },
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    }).stderr;
    return Number(timeOutput.trim().split('\n').at(-1)) / 1024;
  };
  const peakMiB = peakMiBOf('export', '--workspace', slug);
  const verifyPeakMiB = peakMiBOf('verify');
  rmSync(dataDir, { recursive: true, force: true });

  const share = (value: number) => `${Math.round((value / raw) * 100)}% of the raw read`;
  return [
    { scenario: 'history of a record with 1,000 revisions (limit=1000)', result: `${historyMs.toFixed(1)} ms (median of 5)`, target: '-' },
    { scenario: 'GET as of a moment (invoice of 50 lines, roll-ups then)', result: `${asOfMs.toFixed(1)} ms (median of 20)`, target: '-' },
    { scenario: `raw log read (readAll pages of ${PAGE}), ${written.toLocaleString('en-US')} events`, result: `${raw.toLocaleString('en-US')} events/s`, target: 'baseline' },
    { scenario: 'audit export (NDJSON lines built)', result: `${exported.toLocaleString('en-US')} events/s, ${share(exported)}`, target: '>= 50% of raw read' },
    { scenario: `audit verify (chain + every record against the read model; ${verified.ok ? 'ok' : 'FAILED'})`, result: `${verifyRate.toLocaleString('en-US')} events/s, ${share(verifyRate)}`, target: '>= 50% of raw read' },
    { scenario: '`csr audit export` peak RSS over that log', result: `${peakMiB.toFixed(0)} MiB`, target: 'flat' },
    { scenario: '`csr audit verify` peak RSS over that log', result: `${verifyPeakMiB.toFixed(0)} MiB`, target: 'flat' },
  ];
}

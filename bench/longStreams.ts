import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { recordStream } from '../src/events/records.js';
import type { EventMetadata, NewEvent } from '../src/eventstore/port.js';
import { openSqliteEventStore } from '../src/eventstore/sqlite/index.js';

/**
 * Issue 22 item 10: a PATCH of a record with a long history against one of a fresh record, one
 * request at a time so that the figure is the cost of the write, not of queueing. The history is
 * appended to the log directly (a 10,000-request warm-up would take minutes); the server then
 * projects it like any other log on start.
 */

export interface LongStreamDeps {
  dataDir: string;
  workspaceId: string;
  key: string;
  startServer(): Promise<{ url: string; stop(): Promise<void> }>;
}

const REVISIONS = 10_000;
const PATCHES = 300;

export async function longStreamBench(deps: LongStreamDeps): Promise<{ scenario: string; result: string; target: string }> {
  const longId = randomUUID();
  await appendHistory(join(deps.dataDir, 'events.db'), deps.workspaceId, longId, REVISIONS);
  const server = await deps.startServer();
  const headers = { authorization: `Bearer ${deps.key}`, 'content-type': 'application/json' };
  const request = async (method: string, path: string, body: unknown) => {
    const started = performance.now();
    const response = await fetch(`${server.url}${path}`, { method, headers, body: JSON.stringify(body) });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`long-stream bench: ${method} ${path} answered ${response.status} ${text.slice(0, 200)}`);
    return { ms: performance.now() - started, text };
  };
  try {
    // The record exists for the API once the projection shows it.
    for (let tries = 0; ; tries++) {
      const response = await fetch(`${server.url}/api/v1/clients/${longId}`, { headers });
      await response.arrayBuffer();
      if (response.status === 200) break;
      if (tries > 600) throw new Error('long-stream bench: the long record never became visible');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const freshId = (JSON.parse((await request('POST', '/api/v1/clients', { name: `Fresh ${randomUUID()}` })).text) as { ids: string[] }).ids[0]!;
    const fresh: number[] = [];
    const long: number[] = [];
    // Alternating, so that the machine's drift weighs on both alike; the first rounds warm up.
    for (let i = 0; i < PATCHES + 20; i++) {
      const a = await request('PATCH', `/api/v1/clients/${freshId}`, { notes: `fresh ${i}` });
      const b = await request('PATCH', `/api/v1/clients/${longId}`, { notes: `long ${i}` });
      if (i >= 20) {
        fresh.push(a.ms);
        long.push(b.ms);
      }
    }
    const p50 = (samples: number[]) => [...samples].sort((x, y) => x - y)[Math.floor(samples.length / 2)]!;
    const mean = (samples: number[]) => samples.reduce((sum, ms) => sum + ms, 0) / samples.length;
    return {
      scenario: `PATCH one record with ${REVISIONS.toLocaleString('en')} revisions vs a fresh one (${PATCHES} each, one at a time, alternating)`,
      result:
        `fresh p50 ${p50(fresh).toFixed(2)} ms, mean ${mean(fresh).toFixed(2)} ms; ${REVISIONS.toLocaleString('en')} revisions p50 ${p50(long).toFixed(2)} ms, ` +
        `mean ${mean(long).toFixed(2)} ms; ratio of means ${(mean(long) / mean(fresh)).toFixed(2)}`,
      target: 'within 1.5x',
    };
  } finally {
    await server.stop();
  }
}

async function appendHistory(path: string, workspaceId: string, recordId: string, revisions: number): Promise<void> {
  const events = openSqliteEventStore({ path });
  const actionId = randomUUID();
  const metadata: EventMetadata = { source: 'api', actor: { type: 'system', id: 'bench', name: 'bench' }, actionId, correlationId: actionId, causationId: actionId };
  const base = { schemaVersion: 1, workspaceId, object: 'clients', recordId };
  const event = (revision: number): NewEvent =>
    revision === 0
      ? { id: randomUUID(), type: 'RecordCreated', data: { ...base, fields: { name: `Long ${recordId}`, notes: 'n0' } }, metadata }
      : { id: randomUUID(), type: 'RecordUpdated', data: { ...base, changes: { notes: { from: `n${revision - 1}`, to: `n${revision}` } } }, metadata };
  try {
    for (let from = 0; from < revisions; from += 500) {
      const batch = Array.from({ length: Math.min(500, revisions - from) }, (_, i) => event(from + i));
      await events.append(recordStream(recordId), batch, { expectedRevision: from === 0 ? 'no_stream' : from - 1 });
    }
  } finally {
    await events.close();
  }
}

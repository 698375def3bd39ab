import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { Projection } from '../projections/projection.js';
import { startProjection } from '../projections/runner.js';
import { recordStream } from '../src/events/records.js';
import type { EventStore, NewEvent } from '../src/eventstore/port.js';
import { RECORDS_PROJECTION, type ReadStore } from '../src/readstore/port.js';

/** The rebuild benches' log (bench/rebuild.ts, bench/rebuildPostgres.ts): the same events on either backend. */

const ACTOR = { type: 'system' as const, id: 'bench', name: 'bench' };

function created(workspaceId: string, object: string, recordId: string, fields: Record<string, unknown>): NewEvent {
  const actionId = randomUUID();
  return {
    id: randomUUID(),
    type: 'RecordCreated',
    data: { schemaVersion: 1, workspaceId, object, recordId, fields },
    metadata: { source: 'api', actor: ACTOR, actionId, correlationId: actionId, causationId: actionId },
  };
}

/** `count` events: clients, one invoice each and two lines per invoice (4 events per client, so roll-ups cascade). Returns the clients' ids. */
export async function writeLog(events: EventStore, workspaceId: string, count: number): Promise<string[]> {
  const clientIds: string[] = [];
  for (let written = 0; written < count; ) {
    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < 250 && written < count; i++, written += 4) {
      const client = randomUUID();
      const invoice = randomUUID();
      clientIds.push(client);
      const append = (id: string, event: NewEvent) => events.append(recordStream(id), [event], { expectedRevision: 'no_stream' });
      appends.push(append(client, created(workspaceId, 'clients', client, { name: `Client ${written}`, tier: 'SMB' })));
      appends.push(append(invoice, created(workspaceId, 'billing', invoice, { client, status: 'Sent', taxRate: 10 })));
      for (const n of [1, 2]) {
        const line = randomUUID();
        appends.push(append(line, created(workspaceId, 'invoiceLines', line, { invoice, description: `line ${n}`, quantity: n, unitPrice: 10.5 })));
      }
    }
    await Promise.all(appends);
  }
  return clientIds;
}

export const rate = (events: number, ms: number) => Math.round(events / (ms / 1000));

/** The live projector from empty to the log's head: its time in ms (a rebuild never goes past the live checkpoint). */
export async function projectToHead(events: EventStore, readStore: ReadStore, recordProjection: Projection): Promise<number> {
  const head = (await events.headPosition())!;
  const started = performance.now();
  const running = startProjection({ events, readStore, logger: pino({ level: 'silent' }) }, recordProjection);
  await readStore.waitForCheckpoint(RECORDS_PROJECTION, head, 3_600_000);
  const ms = performance.now() - started;
  await running.stop();
  return ms;
}

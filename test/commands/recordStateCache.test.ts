import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { metadataFor, newAction } from '../../commands/action.js';
import { executeRecordCommand, loadRecord } from '../../commands/record/repository.js';
import type { EventStore, ReadStreamOptions } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { newId } from '../../src/core/ids.js';
import { defaultObject } from '../../src/schema/catalogue.js';

const clients = defaultObject('clients')!;

/** Issue 22 item 10: loading a record reads only the events after the state it already knows. */

const dir = mkdtempSync(join(tmpdir(), 'csr-statecache-'));
const store = openSqliteEventStore({ path: join(dir, 'events.db') });
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The store, counting the events each readStream returns. */
function counting(events: EventStore): { events: EventStore; read: number[] } {
  const read: number[] = [];
  const wrapped = Object.create(events) as EventStore;
  wrapped.readStream = async (stream: string, options?: ReadStreamOptions) => {
    const result = await events.readStream(stream, options);
    read.push(result.length);
    return result;
  };
  return { events: wrapped, read };
}

const action = newAction('w1', { type: 'system', id: 'test', name: 'test' }, 'api');
const metadata = metadataFor(action, { clients: 1 });

async function recordWithRevisions(events: EventStore, revisions: number): Promise<string> {
  const recordId = newId();
  await executeRecordCommand(events, clients, recordId, () => ({ type: 'CreateRecord', workspaceId: 'w1', object: 'clients', recordId, fields: { name: 'n0' } }), metadata);
  for (let i = 1; i < revisions; i++) {
    await executeRecordCommand(events, clients, recordId, () => ({ type: 'UpdateRecord', workspaceId: 'w1', object: 'clients', recordId, fields: { name: `n${i}` } }), metadata);
  }
  return recordId;
}

describe('record state cache', () => {
  it('reads only the events appended after the state it loaded before', async () => {
    const { events, read } = counting(store);
    const recordId = await recordWithRevisions(store, 50);
    const first = await loadRecord(events, recordId);
    expect(first.expectedRevision).toBe(49);
    await executeRecordCommand(store, clients, recordId, () => ({ type: 'UpdateRecord', workspaceId: 'w1', object: 'clients', recordId, fields: { name: 'last' } }), metadata);

    read.length = 0;
    const second = await loadRecord(events, recordId);
    expect(read).toEqual([1]);
    expect(second.expectedRevision).toBe(50);
    expect(second.state).toEqual({ status: 'live', workspaceId: 'w1', object: 'clients', fields: { name: 'last' } });
    const all = await store.readStream(`record-${recordId}`);
    expect(second.createdAt).toEqual(all[0]!.created);
    expect(second.updatedAt).toEqual(all.at(-1)!.created);
  });

  it('gives the same state as a full fold when another writer appended meanwhile', async () => {
    const other = openSqliteEventStore({ path: join(dir, 'events.db') });
    try {
      const recordId = await recordWithRevisions(store, 3);
      await loadRecord(store, recordId);
      await executeRecordCommand(other, clients, recordId, () => ({ type: 'UpdateRecord', workspaceId: 'w1', object: 'clients', recordId, fields: { tier: 'SMB' } }), metadata);
      const loaded = await loadRecord(store, recordId);
      expect(loaded.expectedRevision).toBe(3);
      expect(loaded.state).toEqual({ status: 'live', workspaceId: 'w1', object: 'clients', fields: { name: 'n2', tier: 'SMB' } });
    } finally {
      await other.close();
    }
  });
});

import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import type { EventMetadata, EventStore, StreamAppend } from '../../src/eventstore/port.js';
import { privateEvents, type PrivateEventStore } from '../../src/privacy/privateEvents.js';
import { openSqliteKeyStore } from '../../src/privacy/sqlite/index.js';
import type { KeyStore } from '../../src/privacy/port.js';
import { Vault } from '../../src/privacy/vault.js';

/**
 * appendThen seals the groups that hold personal values and writes the others as given (a
 * request's creates: thousands of claims and records, most with nothing personal).
 */
describe('private event store: appendThen', () => {
  const dir = mkdtempSync(join(tmpdir(), 'private-events-'));
  let stored: EventStore;
  let keys: KeyStore;
  let events: PrivateEventStore;
  const lookups: string[] = [];
  const workspaceId = randomUUID();
  const metadata = { source: 'cli', actor: { type: 'system' }, actionId: 'a', correlationId: 'a', causationId: 'a' } as unknown as EventMetadata;

  beforeAll(async () => {
    stored = openSqliteEventStore({ path: join(dir, 'events.db') });
    keys = openSqliteKeyStore({ path: join(dir, 'keys.db') });
    const vault = await Vault.open(randomBytes(32), keys, 'test');
    events = privateEvents(stored, vault, async (_workspace, object) => {
      lookups.push(object);
      return new Set(object === 'contacts' ? ['email'] : []);
    });
  });
  afterAll(async () => {
    await stored.close();
    await keys.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const created = (object: string, recordId: string, fields: Record<string, unknown>): StreamAppend => ({
    stream: `record-${recordId}`,
    events: [{ id: randomUUID(), type: 'RecordCreated', data: { schemaVersion: 1, workspaceId, object, recordId, fields }, metadata }],
    expectedRevision: 'no_stream',
  });

  it('seals the personal values of the groups that hold them, in the log; leaves the others as written; reads back plaintext', async () => {
    const contact = randomUUID();
    const client = randomUUID();
    const first: StreamAppend = { stream: `counter-${randomUUID()}`, events: [{ id: randomUUID(), type: 'NumbersReserved', data: { first: 1, last: 2 }, metadata }], expectedRevision: 'no_stream' };
    lookups.length = 0;
    const { then } = await events.appendThen(first, [
      [created('clients', client, { name: 'Acme' })],
      [created('clients', randomUUID(), { name: 'Beta' })],
      [created('contacts', contact, { name: 'Ann', email: 'ann@example.com' })],
    ]);
    expect(then.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    // One lookup of the personal fields per object of the call, not one per event.
    expect(lookups.sort()).toEqual(['clients', 'contacts']);

    const [storedContact] = await stored.readStream(`record-${contact}`);
    const storedFields = storedContact!.data['fields'] as Record<string, unknown>;
    expect(storedFields['name']).toBe('Ann');
    expect(JSON.stringify(storedFields['email'])).not.toContain('ann@example.com');
    const [storedClient] = await stored.readStream(`record-${client}`);
    expect(storedClient!.data['fields']).toEqual({ name: 'Acme' });

    const [readContact] = await events.readStream(`record-${contact}`);
    expect(readContact!.data['fields']).toEqual({ name: 'Ann', email: 'ann@example.com' });
  });

  it('a group holding personal values after one that holds none is sealed too', async () => {
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const first: StreamAppend = { stream: `counter-${randomUUID()}`, events: [{ id: randomUUID(), type: 'NumbersReserved', data: {}, metadata }], expectedRevision: 'no_stream' };
    await events.appendThen(first, [
      [created('clients', ids[0]!, { name: 'A' }), created('contacts', ids[1]!, { name: 'B' })],
      [created('clients', ids[2]!, { name: 'C' }), created('contacts', randomUUID(), { name: 'D', email: 'd@example.com' })],
    ]);
    const log = await stored.readAll({ from: 'start', maxCount: 10_000 });
    expect(JSON.stringify(log.map((event) => event.data))).not.toContain('d@example.com');
  });
});

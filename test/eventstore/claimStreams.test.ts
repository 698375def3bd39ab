import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Conflict } from '../../src/core/errors.js';
import type { EventMetadata, NewEvent } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { claimKey } from '../../src/eventstore/sqlite/eventLog.js';
import { Sqlite } from '../../src/sqlite/driver.js';

/**
 * The embedded store keeps claim streams (reservations, auto-number counters) beside the log
 * (issue 44): a create writes one event to the log instead of four, and followers never read
 * claims. A log written before kept them in the log: they are taken over when the store opens.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-claims-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const metadata: EventMetadata = { source: 'api', actor: { type: 'system', id: 't', name: 't' }, actionId: 'a', correlationId: 'c', causationId: 'c' };
const event = (type: string): NewEvent => ({ id: randomUUID(), type, data: { n: 1 }, metadata });

/**
 * A store holding a reservation stream of two events and a counter of one, closed, then changed by
 * hand into the layout an earlier version left (`asBefore`, SQL); returns its path.
 */
async function storeOfAnEarlierLayout(reservation: string, asBefore: string): Promise<string> {
  const path = join(dir, `${randomUUID()}.db`);
  const store = openSqliteEventStore({ path });
  await store.append(reservation, [event('ValueReserved'), event('ValueReleased')], { expectedRevision: 'no_stream' });
  await store.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 'no_stream' });
  await store.close();
  const db = new Sqlite(path);
  db.exec(asBefore);
  db.close();
  return path;
}

describe('claim streams on the embedded store', () => {
  it('are not in the log, its chain or its subscriptions, and commit with the record', async () => {
    const store = openSqliteEventStore({ path: join(dir, `${randomUUID()}.db`) });
    await store.appendThen([{ stream: 'reservation-w-clients-abc', events: [event('ValueReserved')], expectedRevision: 'no_stream' }, { stream: 'record-r1', events: [event('RecordCreated')], expectedRevision: 'no_stream' }], []);
    expect((await store.readAll({ from: 'start', maxCount: 10 })).map((e) => e.stream)).toEqual(['record-r1']);
    expect(await store.checkChain({ until: await store.headPosition() })).toMatchObject({ events: 1, chained: 1, firstBreak: null });
    const [claim] = await store.readStream('reservation-w-clients-abc');
    expect(claim).toMatchObject({ type: 'ValueReserved', revision: 0, metadata: { actionId: 'a' } });
    expect(claim!.created.getTime()).toBe((await store.readStream('record-r1'))[0]!.created.getTime());
    await store.close();
  });

  it('of a log written before are taken over at open, and go on at their revision', async () => {
    // As a log written before the claims table: the claims in the events table, no claims table.
    const path = await storeOfAnEarlierLayout(
      'reservation-w-clients-old',
      'INSERT INTO events (id, stream, revision, type, created, data, metadata) SELECT id, stream, revision, type, created, data, metadata FROM claims; DROP TABLE claims',
    );

    const reopened = openSqliteEventStore({ path });
    expect((await reopened.readStream('reservation-w-clients-old')).map((e) => [e.type, e.revision])).toEqual([['ValueReserved', 0], ['ValueReleased', 1]]);
    await expect(reopened.append('reservation-w-clients-old', [event('ValueReserved')], { expectedRevision: 0 })).rejects.toBeInstanceOf(Conflict);
    await expect(reopened.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(Conflict);
    await reopened.append('reservation-w-clients-old', [event('ValueReserved')], { expectedRevision: 1 });
    const [last] = await reopened.readStream('reservation-w-clients-old', { direction: 'backwards', maxCount: 1 });
    expect([last!.type, last!.revision]).toEqual(['ValueReserved', 2]);
    await reopened.close();
  });
  it('are told apart by their whole name where two share the key the index keeps of them', async () => {
    const store = openSqliteEventStore({ path: join(dir, `${randomUUID()}.db`) });
    // The same last 16 characters, as two digests that end alike would have.
    const [one, other] = ['reservation-w1-clients-aaaa0123456789abcdef', 'reservation-w2-contacts-bbbb0123456789abcdef'];
    await store.append(one, [event('ValueReserved')], { expectedRevision: 'no_stream' });
    await store.append(other, [event('ValueReserved')], { expectedRevision: 'no_stream' });
    await store.append(other, [event('ValueReleased')], { expectedRevision: 0 });
    await expect(store.append(one, [event('ValueReserved')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(Conflict);
    await expect(store.append(one, [event('ValueReleased')], { expectedRevision: 1 })).rejects.toBeInstanceOf(Conflict);
    expect((await store.readStream(one)).map((e) => e.revision)).toEqual([0]);
    expect((await store.readStream(other, { direction: 'backwards', maxCount: 1 })).map((e) => [e.type, e.revision])).toEqual([['ValueReleased', 1]]);
    await store.close();
  });

  it('of the first claims table, unique on the whole name, move to the keyed one at open and go on at their revision', async () => {
    // As a log of the version before: the claims table unique on (stream, revision), no keyed index.
    const path = await storeOfAnEarlierLayout(
      'reservation-w-clients-0123456789abcdef0123',
      `ALTER TABLE claims RENAME TO claims_now;
       CREATE TABLE claims (stream TEXT NOT NULL, revision INTEGER NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL, created INTEGER NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (stream, revision));
       INSERT INTO claims SELECT * FROM claims_now; DROP TABLE claims_now;`,
    );

    const reopened = openSqliteEventStore({ path });
    expect((await reopened.readStream('reservation-w-clients-0123456789abcdef0123')).map((e) => [e.type, e.revision])).toEqual([['ValueReserved', 0], ['ValueReleased', 1]]);
    await expect(reopened.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(Conflict);
    await reopened.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 0 });
    await reopened.close();
    const file = new Sqlite(path, { readonly: true });
    const layout = file.prepare("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'claims' ORDER BY name").all() as { name: string; sql: string | null }[];
    expect(layout.map((entry) => entry.name)).toEqual(['claims', 'claims_by_key']);
    expect(layout[1]!.sql).toContain(claimKey('stream'));
    expect(file.prepare('SELECT count(*) AS n FROM claims').get()).toEqual({ n: 4 });
    file.close();
  });
});

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Conflict } from '../../src/core/errors.js';
import type { EventMetadata, NewEvent } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
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
    const path = join(dir, `${randomUUID()}.db`);
    const store = openSqliteEventStore({ path });
    await store.append('reservation-w-clients-old', [event('ValueReserved'), event('ValueReleased')], { expectedRevision: 'no_stream' });
    await store.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 'no_stream' });
    await store.close();
    // As a log written before the claims table: the claims in the events table, no claims table.
    const db = new Sqlite(path);
    db.exec("INSERT INTO events (id, stream, revision, type, created, data, metadata) SELECT id, stream, revision, type, created, data, metadata FROM claims; DROP TABLE claims");
    db.close();

    const reopened = openSqliteEventStore({ path });
    expect((await reopened.readStream('reservation-w-clients-old')).map((e) => [e.type, e.revision])).toEqual([['ValueReserved', 0], ['ValueReleased', 1]]);
    await expect(reopened.append('reservation-w-clients-old', [event('ValueReserved')], { expectedRevision: 0 })).rejects.toBeInstanceOf(Conflict);
    await expect(reopened.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(Conflict);
    await reopened.append('reservation-w-clients-old', [event('ValueReserved')], { expectedRevision: 1 });
    const [last] = await reopened.readStream('reservation-w-clients-old', { direction: 'backwards', maxCount: 1 });
    expect([last!.type, last!.revision]).toEqual(['ValueReserved', 2]);
    await reopened.close();
  });
});

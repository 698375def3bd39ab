import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AutoNumbers, type AssignedNumber } from '../../commands/autoNumbers.js';
import { fieldsKey, nameKey, RESERVATION_STREAM_PREFIX } from '../../commands/reservations/keys.js';
import { claimAppend, releaseAppends, type ReservationScope } from '../../commands/reservations/store.js';
import { Conflict } from '../../src/core/errors.js';
import type { EventMetadata, EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { defaultObject } from '../../src/schema/catalogue.js';

/** Claims that join the number's reservation (atomicGroups): a lost claim takes no number. */

const root = mkdtempSync(join(tmpdir(), 'csr-autonumbers-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const clients = defaultObject('clients')!;
const numbered = { object: clients, field: 'clientNumber', prefix: 'CL-' };
const metadata: EventMetadata = { source: 'api', actor: { type: 'system', id: 't', name: 't' }, actionId: 'a', correlationId: 'c', causationId: 'c' };

describe('AutoNumbers with claims', () => {
  let events: EventStore;
  afterEach(async () => events.close());

  const setUp = () => {
    events = openSqliteEventStore({ path: join(root, randomUUID(), 'events.sqlite') });
    const scope: ReservationScope = { events, workspaceId: 'w1', object: clients, loadState: async () => ({ status: 'absent' }) };
    const nameClaim = (name: string, recordId: string) => claimAppend(scope, nameKey(clients, { name })!, { kind: 'free', expectedRevision: 'no_stream' }, recordId, metadata);
    const record = (recordId: string) => ([assigned]: AssignedNumber[]) => [[assigned!.claim(recordId), { stream: `record-${recordId}`, events: [{ id: randomUUID(), type: 'RecordCreated', data: { number: assigned!.value }, metadata }], expectedRevision: 'no_stream' as const }]];
    return { numbers: new AutoNumbers(events), nameClaim, record };
  };

  it('writes the claims, the reservation and the record in one commit', async () => {
    const { numbers, nameClaim, record } = setUp();
    const [outcome] = await numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r1'), [nameClaim('Acme', 'r1')]);
    expect(outcome!.status).toBe('fulfilled');
    // The claims are kept beside the log (claim streams, port.ts): the log holds the record alone.
    const log = await events.readAll({ from: 'start', maxCount: 100 });
    expect(log.map((event) => event.type)).toEqual(['RecordCreated']);
    const [counter] = await events.readStream('autonumber-w1-clients');
    const [name] = await events.readStream(nameClaim('Acme', 'r1').stream);
    expect([counter!.type, name!.type]).toEqual(['NumbersReserved', 'ValueReserved']);
    expect(new Set([...log, counter!, name!].map((event) => event.created.getTime())).size).toBe(1);
  });

  it('of two requests in one batch claiming one name, the second fails with a Conflict and takes no number', async () => {
    const { numbers, nameClaim, record } = setUp();
    const settled = await Promise.allSettled([
      numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r1'), [nameClaim('Acme', 'r1')]),
      numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r2'), [nameClaim('ACME', 'r2')]),
      numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r3'), [nameClaim('Other', 'r3')]),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(Conflict);
    expect(await events.readStream('record-r2')).toEqual([]);
    // Gap-free: the two written records hold 1 and 2, and the next request takes 3.
    const held = async (id: string) => (await events.readStream(`record-${id}`))[0]!.data['number'];
    expect([await held('r1'), await held('r3')].sort()).toEqual(['CL-00001', 'CL-00002']);
    await numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r4'), [nameClaim('Fourth', 'r4')]);
    expect(await held('r4')).toBe('CL-00003');
  });

  /** The store, counting its reads of reservation streams (the claims of names and numbers). */
  const counted = (store: EventStore, overrides: Partial<EventStore> = {}) => {
    const reads = { count: 0 };
    const wrapped = new Proxy(store, {
      get(target, property) {
        if (property in overrides) return overrides[property as keyof EventStore];
        if (property === 'readStream') {
          return (stream: string, options?: Parameters<EventStore['readStream']>[1]) => {
            if (stream.startsWith(RESERVATION_STREAM_PREFIX)) reads.count++;
            return target.readStream(stream, options);
          };
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return { wrapped, reads };
  };
  const byHand = async (scope: ReservationScope, value: string, recordId: string) => {
    const key = fieldsKey(['clientNumber'], { clientNumber: value })!;
    const claim = claimAppend(scope, key, { kind: 'free', expectedRevision: 'no_stream' }, recordId, metadata);
    await scope.events.append(claim.stream, claim.events, { expectedRevision: claim.expectedRevision });
    return key;
  };
  const numberOf = async (id: string) => (await events.readStream(`record-${id}`))[0]?.data['number'];

  it('where groups are all or none, claims a block of numbers without reading their claims, in the reservation\'s group', async () => {
    const { record } = setUp();
    const { wrapped, reads } = counted(events);
    const numbers = new AutoNumbers(wrapped);
    const settled = await Promise.all(['r1', 'r2', 'r3'].map((id) => numbers.reserveAndAppend('w1', numbered, 1, metadata, record(id))));
    expect(settled.flat().map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(reads.count).toBe(0);
    expect(await Promise.all(['r1', 'r2', 'r3'].map(numberOf))).toEqual(['CL-00001', 'CL-00002', 'CL-00003']);
  });

  it.each([
    { given: 'a number set by hand ahead of the counter', released: false, numbers: ['CL-00001', 'CL-00003', 'CL-00004'] },
    { given: 'a number set by hand, then given back (its record renamed or deleted)', released: true, numbers: ['CL-00001', 'CL-00002', 'CL-00003'] },
  ])('$given: nothing is written, the block is made again from reads, and no number is lost', async ({ released, numbers: expected }) => {
    const { record } = setUp();
    const scope: ReservationScope = { events, workspaceId: 'w1', object: clients, loadState: async () => ({ status: 'absent' }) };
    const key = await byHand(scope, 'cl-00002', 'hand');
    if (released) {
      const [release] = await releaseAppends(scope, [key], 'hand', 'deleted', metadata);
      await events.append(release!.stream, release!.events, { expectedRevision: release!.expectedRevision });
    }
    const { wrapped, reads } = counted(events);
    const numbers = new AutoNumbers(wrapped);
    const settled = await Promise.all(['r1', 'r2', 'r3'].map((id) => numbers.reserveAndAppend('w1', numbered, 1, metadata, record(id))));
    expect(settled.flat().map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(await Promise.all(['r1', 'r2', 'r3'].map(numberOf))).toEqual(expected);
    // The presumed block was written not at all: one NumbersReserved, from the reads.
    expect((await events.readStream('autonumber-w1-clients')).length).toBe(1);
    expect(reads.count).toBe(expected.includes('CL-00004') ? 4 : 3);
    // That counter is read first from then on.
    await numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r4'));
    expect(reads.count).toBe(expected.includes('CL-00004') ? 5 : 4);
  });

  it('where groups are not all or none, reads each number\'s claim and writes it with its record', async () => {
    const { record } = setUp();
    const { wrapped, reads } = counted(events, { atomicGroups: false });
    const numbers = new AutoNumbers(wrapped, { audit: false });
    const scope: ReservationScope = { events, workspaceId: 'w1', object: clients, loadState: async () => ({ status: 'absent' }) };
    await byHand(scope, 'CL-00001', 'hand');
    const [outcome] = await numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r1'));
    expect(outcome!.status).toBe('fulfilled');
    expect(await numberOf('r1')).toBe('CL-00002');
    expect(reads.count).toBe(2);
  });

  it('refuses claims on a store that writes groups one append after another', async () => {
    const { nameClaim, record } = setUp();
    const separate = new AutoNumbers({ ...events, atomicGroups: false } as EventStore);
    await expect(separate.reserveAndAppend('w1', numbered, 1, metadata, record('r1'), [nameClaim('Acme', 'r1')])).rejects.toThrow(/atomic groups/);
  });
});

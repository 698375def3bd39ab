import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AutoNumbers } from '../../commands/autoNumbers.js';
import { fieldsKey, reservationStream } from '../../commands/reservations/keys.js';
import { claimAppend, type ReservationScope } from '../../commands/reservations/store.js';
import { blocksToJudge, numberFate, type ClaimEvent, type ReservedBlock } from '../../commands/numberAudit/judge.js';
import { listSkippedNumbers } from '../../queries/skippedNumbers.js';
import type { EventMetadata, EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { skippedNumbersStream } from '../../src/events/numbers.js';
import { defaultObject } from '../../src/schema/catalogue.js';
import { eventStoreDbRules, numberedRecord } from '../support/numberAudit.js';

/**
 * Issue 39 item 2 on EventStoreDB: a number reserved and never used by a record (its writer died
 * between the appends) is found by the number audit and recorded once, with its reason. The pure
 * judge as given/when/then tables; then whole audits on a store that follows EventStoreDB's rules
 * (atomic per stream only, appendThen through the adapter's own appendInOrder), where a "crash"
 * stops every append after a given one.
 */

const at = (seconds: number) => new Date(Date.UTC(2026, 11, 6, 3, 0, seconds));
const block = (revision: number, first: number, last: number, createdSeconds: number): ReservedBlock => ({ revision, first, last, prefix: 'CL-', created: at(createdSeconds) });

describe('blocksToJudge', () => {
  const GRACE = 30_000;
  it.each([
    { given: [], now: 100, max: 10, judged: [], waitUntil: null },
    { given: [block(0, 1, 1, 0), block(1, 2, 2, 10)], now: 100, max: 10, judged: [0, 1], waitUntil: null },
    // A block younger than the grace period may still be getting its records: judging stops there.
    { given: [block(0, 1, 1, 0), block(1, 2, 2, 90), block(2, 3, 3, 0)], now: 100, max: 10, judged: [0], waitUntil: at(120) },
    { given: [block(0, 1, 1, 80)], now: 100, max: 10, judged: [], waitUntil: at(110) },
    // At most about max numbers, whole blocks, and at least one block however large.
    { given: [block(0, 1, 900, 0), block(1, 901, 901, 0)], now: 100, max: 10, judged: [0], waitUntil: null },
    { given: [block(0, 1, 5, 0), block(1, 6, 10, 0), block(2, 11, 11, 0)], now: 100, max: 10, judged: [0, 1], waitUntil: null },
  ])('given blocks $given.length, when judged at $now s (max $max), then $judged', ({ given, now, max, judged, waitUntil }) => {
    const result = blocksToJudge(given, at(now), GRACE, max);
    expect(result.judge.map((b) => b.revision)).toEqual(judged);
    expect(result.waitUntil).toEqual(waitUntil);
  });
});

describe('numberFate', () => {
  const reserved = (recordId: string): ClaimEvent => ({ type: 'ValueReserved', recordId });
  const released = (recordId: string): ClaimEvent => ({ type: 'ValueReleased', recordId });
  it.each([
    { why: 'no claim at all: reserved, never claimed', claims: [], written: [], fate: 'unclaimed' },
    { why: 'claimed by its record, which was written', claims: [reserved('r1')], written: ['r1'], fate: 'taken' },
    { why: 'claimed for a record never written', claims: [reserved('r1')], written: [], fate: 'unwritten' },
    { why: 'renumbered later: the first holder was written', claims: [reserved('r1'), released('r1')], written: ['r1'], fate: 'taken' },
    { why: 'a stale claim taken over by a record with the value set by hand', claims: [reserved('r1'), released('r1'), reserved('r2')], written: ['r2'], fate: 'taken' },
    { why: 'an abandoned claim, nothing written', claims: [reserved('r1'), released('r1')], written: [], fate: 'unwritten' },
  ])('$why: $fate', ({ claims, written, fate }) => {
    expect(numberFate(claims, (id) => written.includes(id))).toBe(fate);
  });
});

const root = mkdtempSync(join(tmpdir(), 'csr-number-audit-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const clients = defaultObject('clients')!;
const numbered = { object: clients, field: 'clientNumber', prefix: 'CL-' };
const metadata: EventMetadata = { source: 'api', actor: { type: 'system', id: 't', name: 't' }, actionId: 'a', correlationId: 'c', causationId: 'c' };

const record = (recordId: string) => numberedRecord(recordId, metadata);

describe('the number audit on EventStoreDB rules', () => {
  let store: EventStore;
  afterEach(async () => store.close());
  const open = () => (store = openSqliteEventStore({ path: join(root, randomUUID(), 'events.sqlite') }));
  const later = () => new Date(Date.now() + 31_000);

  it('records the numbers of a reservation whose writer died before claiming them, once, and the next number goes on after them', async () => {
    open();
    const dying = eventStoreDbRules(store);
    const first = new AutoNumbers(dying.events, { audit: false });
    await first.reserveAndAppend('w1', numbered, 1, metadata, record('r1'));
    // Three creates served by one reservation; the process dies once it is acknowledged.
    dying.crashAfter(1);
    for (const id of ['r2', 'r3', 'r4']) void first.reserveAndAppend('w1', numbered, 1, metadata, record(id));
    await until(async () => (await store.readStream('autonumber-w1-clients')).length === 2);

    // The restarted process, more than the grace period later.
    const restarted = new AutoNumbers(eventStoreDbRules(store).events, { now: later });
    const [next] = await restarted.reserveAndAppend('w1', numbered, 1, metadata, record('r5'));
    expect(next!.status).toBe('fulfilled');
    expect((await store.readStream('record-r5'))[0]!.data).toEqual({ fields: { clientNumber: 'CL-00005' } });
    // Taking a number audits the counter (the first time in a process at once).
    await until(async () => (await listSkippedNumbers(store, 'w1', ['clients'])).length > 0);
    const skipped = await listSkippedNumbers(store, 'w1', ['clients']);
    expect(skipped.map(({ value, reason }) => ({ value, reason }))).toEqual([
      { value: 'CL-00002', reason: 'unclaimed' },
      { value: 'CL-00003', reason: 'unclaimed' },
      { value: 'CL-00004', reason: 'unclaimed' },
    ]);
    expect(skipped[0]!.explanation).toMatch(/never written/);
    const reservations = await store.readStream('autonumber-w1-clients');
    expect(skipped[0]!.reservedAt).toBe(reservations[1]!.created.toISOString());

    // Audited again (another process, or later): nothing is recorded twice.
    await new AutoNumbers(store, { audit: true, now: later }).audit('w1', numbered);
    expect(await listSkippedNumbers(store, 'w1', ['clients'])).toHaveLength(3);
  });

  it('works through a long counter a slice at a time when asked, to the end', async () => {
    open();
    const noRecords = () => [];
    // Three 900-number reservations, each by a process that died right after it (2,700 numbers, more than one run judges).
    for (let i = 0; i < 3; i++) {
      const dying = eventStoreDbRules(store);
      dying.crashAfter(1);
      void new AutoNumbers(dying.events, { audit: false }).reserveAndAppend('w1', numbered, 900, metadata, noRecords);
      await until(async () => (await store.readStream('autonumber-w1-clients')).length === i + 1);
    }
    await new AutoNumbers(store, { audit: true, now: later }).audit('w1', numbered);
    const skipped = await listSkippedNumbers(store, 'w1', ['clients']);
    expect(skipped.map((s) => s.number)).toEqual(Array.from({ length: 2700 }, (_, i) => i + 1));
    expect((await store.readStream(skippedNumbersStream('w1', 'clients'))).at(-1)!.data['checkedThrough']).toBe(2);
  });

  it('records a number whose value was claimed for a record that was never written', async () => {
    open();
    const dying = eventStoreDbRules(store);
    const numbers = new AutoNumbers(dying.events, { audit: false });
    // The reservation and the value's claim are written; the record is not.
    dying.crashAfter(2);
    void numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r1'));
    const claim = reservationStream('w1', 'clients', fieldsKey(['clientNumber'], { clientNumber: 'CL-00001' })!);
    await until(async () => (await store.readStream(claim)).length === 1);
    expect(await store.readStream('record-r1')).toEqual([]);
    const audit = new AutoNumbers(store, { audit: true, now: later });
    await audit.audit('w1', numbered);
    expect((await listSkippedNumbers(store, 'w1', ['clients'])).map(({ value, reason }) => ({ value, reason }))).toEqual([{ value: 'CL-00001', reason: 'unwritten' }]);
  });

  it('judges no reservation younger than the grace period, and records nothing where every number has its record', async () => {
    open();
    const rules = eventStoreDbRules(store);
    const numbers = new AutoNumbers(rules.events, { audit: false });
    await numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r1'));
    // A value set by hand is held by its record: the counter skips it, and it is no gap.
    const scope: ReservationScope = { events: store, workspaceId: 'w1', object: clients, loadState: async () => ({ status: 'absent' }) };
    const byHand = claimAppend(scope, fieldsKey(['clientNumber'], { clientNumber: 'cl-00002' })!, { kind: 'free', expectedRevision: 'no_stream' }, 'r9', metadata);
    await store.appendThen([byHand, { stream: 'record-r9', events: [{ id: randomUUID(), type: 'RecordCreated', data: {}, metadata }], expectedRevision: 'no_stream' }], []);
    await numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r2'));
    expect((await store.readStream('record-r2'))[0]!.data).toEqual({ fields: { clientNumber: 'CL-00003' } });
    await new AutoNumbers(store, { audit: true }).audit('w1', numbered);
    expect(await store.readStream(skippedNumbersStream('w1', 'clients'))).toEqual([]);
    await new AutoNumbers(store, { audit: true, now: later }).audit('w1', numbered);
    expect((await store.readStream(skippedNumbersStream('w1', 'clients'))).map((event) => [event.type, event.data['checkedThrough']])).toEqual([['NumbersChecked', 1]]);
    expect(await listSkippedNumbers(store, 'w1', ['clients'])).toEqual([]);
  });

  it('is not run where a number is written with its record (the embedded store, PostgreSQL)', async () => {
    open();
    const numbers = new AutoNumbers(store, { now: later });
    await numbers.reserveAndAppend('w1', numbered, 1, metadata, record('r1'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Nor when asked (csr numbers skipped asks on every backend): the log stays the records' alone.
    await numbers.audit('w1', numbered);
    expect(await store.readStream(skippedNumbersStream('w1', 'clients'))).toEqual([]);
    expect((await store.readAll({ from: 'start', maxCount: 10 })).map((event) => event.stream)).toEqual(['record-r1']);
  });
});

async function until(condition: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

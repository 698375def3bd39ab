import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Conflict } from '../../src/core/errors.js';
import { until } from '../support/until.js';
import { withoutHash } from '../../src/eventstore/chain.js';
import { ChainCheck } from '../../src/eventstore/chainCheck.js';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  PersistentEvent,
  PersistentSubscription,
  PersistentSubscriptionOptions,
  RecordedEvent,
  StreamEvent,
  Subscription,
} from '../../src/eventstore/port.js';
import { retryDelayMs } from '../../src/eventstore/port.js';

export interface EventStoreContractOptions {
  /** Whether the store can edit events written before the audit chain (the embedded one can; EventStoreDB cannot). */
  rewritesUnchained?: boolean;
  /** How long to wait for an event that must arrive (default 5 s; a remote server may need more). */
  waitMs?: number;
  /** Allowed difference between this machine's clock and the log's commit time (default 5 s). */
  clockSkewMs?: number;
}

/**
 * The behaviour every EventStore adapter must show. Stream names and group names are unique per
 * test, so the suite can run against a shared server that holds other data.
 */
export function eventStoreContract(
  name: string,
  open: () => Promise<EventStore> | EventStore,
  options: EventStoreContractOptions = {},
): void {
  const waitMs = options.waitMs ?? 5_000;
  const clockSkewMs = options.clockSkewMs ?? 5_000;

  describe(`EventStore contract: ${name}`, () => {
    let store: EventStore;
    let prefix: string;
    const closeables: Array<{ close(): Promise<void> }> = [];

    beforeEach(async () => {
      store = await open();
      prefix = `contract-${randomUUID()}-`;
    });

    afterEach(async () => {
      for (const closeable of closeables.splice(0)) await closeable.close();
      await store.close();
    });

    const streamName = (label = 'stream') => `${prefix}${label}-${randomUUID()}`;

    function track<T extends { close(): Promise<void> }>(closeable: T): T {
      closeables.push(closeable);
      return closeable;
    }

    function subscribe(from: RecordedEvent['position'] | 'start', prefixes = [prefix]): Subscription {
      return track(store.subscribeToAll({ from, filter: { streamPrefixes: prefixes } }));
    }

    function consumer(group: string, settings: PersistentSubscriptionOptions = {}): PersistentSubscription {
      return track(store.persistentSubscription(group, { filter: { streamPrefixes: [prefix] }, retryBackoff: QUICK_RETRIES, ...settings }));
    }

    /**
     * A consumer of a new group once the group exists (it starts at the end of the log, and a
     * server may create it a moment after the call): probe events are appended until one arrives;
     * probes are acked and never shown to the test.
     */
    async function startedConsumer(group: string, settings: PersistentSubscriptionOptions = {}): Promise<PersistentSubscription> {
      const inner = consumer(group, settings);
      const iterator = inner[Symbol.asyncIterator]();
      const probes = streamName('probe');
      let arrived = false;
      const first = (async () => {
        for (;;) {
          const next = await iterator.next();
          if (next.done) throw new Error('the group ended while starting');
          await next.value.ack();
          if (next.value.event.type === PROBE) return;
        }
      })();
      first.then(() => (arrived = true), () => undefined);
      const deadline = Date.now() + waitMs;
      while (!arrived) {
        if (Date.now() > deadline) throw new Error('the new group never handed out an event');
        await appendOne(probes, 'any', PROBE);
        await Promise.race([first, new Promise((resolve) => setTimeout(resolve, 200))]);
      }
      const skipping: AsyncIterator<PersistentEvent> = {
        async next() {
          for (;;) {
            const next = await iterator.next();
            if (next.done || next.value.event.type !== PROBE) return next;
            await next.value.ack();
          }
        },
      };
      return { [Symbol.asyncIterator]: () => skipping, close: () => inner.close(), connected: () => inner.connected() };
    }

    async function appendOne(stream: string, expectedRevision: ExpectedRevision = 'any', type = 'Happened') {
      const event = newEvent(type);
      const result = await store.append(stream, [event], { expectedRevision });
      return { event, result };
    }

    async function expectConflict(promise: Promise<unknown>, stream: string): Promise<void> {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Conflict);
      expect((error as Conflict).stream).toBe(stream);
      expect((error as Conflict).status).toBe(409);
    }

    describe('rewriteUnchained', () => {
      it(options.rewritesUnchained ? 'never changes a chained event' : 'is refused with a clear error, changing nothing', async () => {
        const stream = streamName();
        const { event } = await appendOne(stream);
        const rewriting = store.rewriteUnchained(stream, (found) => ({ ...found.data, rewritten: true }));
        if (options.rewritesUnchained) expect(await rewriting).toBe(0);
        else await expect(rewriting).rejects.toThrow(/cannot edit a stored event/);
        expect((await store.readStream(stream)).map((found) => found.data)).toEqual([event.data]);
      });
    });

    describe('append and readStream', () => {
      it('round-trips ids, types, data, metadata, revisions, positions and commit time', async () => {
        const stream = streamName();
        const events = [newEvent('RecordCreated', { n: 1, nested: { list: [1, 'two', null] } }), newEvent('RecordUpdated')];
        events[1]!.metadata.actionCounts = { clients: 2 };
        const before = Date.now();
        const result = await store.append(stream, events, { expectedRevision: 'no_stream' });
        const after = Date.now();

        const read = await store.readStream(stream);

        expect(read.map((e) => ({ id: e.id, type: e.type, stream: e.stream, revision: e.revision, data: e.data, metadata: withoutHash(e.metadata) }))).toEqual(
          events.map((e, revision) => ({ id: e.id, type: e.type, stream, revision, data: e.data, metadata: e.metadata })),
        );
        for (const event of read) {
          expect(event.created).toBeInstanceOf(Date);
          expect(event.created.getTime()).toBeGreaterThanOrEqual(before - clockSkewMs);
          expect(event.created.getTime()).toBeLessThanOrEqual(after + clockSkewMs);
        }
        expect(read[0]!.position < read[1]!.position).toBe(true);
        expect(result).toEqual({ position: read[1]!.position, nextRevision: 1 });
        const head = await store.headPosition();
        expect(head !== null && head >= result.position).toBe(true);
      });

      it('gives positions that increase strictly across streams, in append order', async () => {
        const a = streamName('a');
        const b = streamName('b');
        const first = await appendOne(a);
        const second = await appendOne(b);
        const third = await appendOne(a);

        expect(first.result.position < second.result.position).toBe(true);
        expect(second.result.position < third.result.position).toBe(true);
        expect((await store.readStream(a)).map((e) => e.position)).toEqual([first.result.position, third.result.position]);
        expect((await store.readStream(b)).map((e) => e.position)).toEqual([second.result.position]);
      });

      it('reads a missing stream as empty', async () => {
        expect(await store.readStream(streamName())).toEqual([]);
      });

      it('reads backwards and honours maxCount', async () => {
        const stream = streamName();
        await store.append(stream, [1, 2, 3, 4, 5].map(() => newEvent()), { expectedRevision: 'no_stream' });

        const revisions = async (opts: Parameters<EventStore['readStream']>[1]) =>
          (await store.readStream(stream, opts)).map((e) => e.revision);
        expect(await revisions({ direction: 'forwards' })).toEqual([0, 1, 2, 3, 4]);
        expect(await revisions({ maxCount: 2 })).toEqual([0, 1]);
        expect(await revisions({ direction: 'backwards' })).toEqual([4, 3, 2, 1, 0]);
        expect(await revisions({ direction: 'backwards', maxCount: 2 })).toEqual([4, 3]);
      });

      it('reads from a revision on: forwards from it, backwards down from it', async () => {
        const stream = streamName();
        await store.append(stream, [1, 2, 3, 4, 5].map(() => newEvent()), { expectedRevision: 'no_stream' });

        const revisions = async (opts: Parameters<EventStore['readStream']>[1]) =>
          (await store.readStream(stream, opts)).map((e) => e.revision);
        expect(await revisions({ fromRevision: 3 })).toEqual([3, 4]);
        expect(await revisions({ fromRevision: 0, maxCount: 2 })).toEqual([0, 1]);
        expect(await revisions({ fromRevision: 5 })).toEqual([]);
        expect(await revisions({ direction: 'backwards', fromRevision: 2 })).toEqual([2, 1, 0]);
        expect(await store.readStream(streamName(), { fromRevision: 1 })).toEqual([]);
        await expect(store.readStream(stream, { fromRevision: -1 })).rejects.toThrow(RangeError);
      });

      it('rejects an empty append with a RangeError and writes nothing', async () => {
        const stream = streamName();
        await expect(store.append(stream, [], { expectedRevision: 'any' })).rejects.toThrow(RangeError);
        expect(await store.readStream(stream)).toEqual([]);
      });

      it('rejects a negative expected revision with a RangeError', async () => {
        await expect(store.append(streamName(), [newEvent()], { expectedRevision: -1 })).rejects.toThrow(RangeError);
      });
    });

    describe('expected revision', () => {
      it("'no_stream' succeeds on a new stream and conflicts on an existing one", async () => {
        const stream = streamName();
        const { result } = await appendOne(stream, 'no_stream');
        expect(result.nextRevision).toBe(0);

        await expectConflict(store.append(stream, [newEvent()], { expectedRevision: 'no_stream' }), stream);
        expect(await store.readStream(stream)).toHaveLength(1);
      });

      it("'stream_exists' conflicts on a missing stream and succeeds on an existing one", async () => {
        const stream = streamName();
        await expectConflict(store.append(stream, [newEvent()], { expectedRevision: 'stream_exists' }), stream);
        expect(await store.readStream(stream)).toEqual([]);

        await appendOne(stream, 'no_stream');
        const { result } = await appendOne(stream, 'stream_exists');
        expect(result.nextRevision).toBe(1);
      });

      it("'any' succeeds whether or not the stream exists", async () => {
        const stream = streamName();
        expect((await appendOne(stream, 'any')).result.nextRevision).toBe(0);
        expect((await appendOne(stream, 'any')).result.nextRevision).toBe(1);
      });

      it('a number must be the revision of the last event', async () => {
        const stream = streamName();
        await expectConflict(store.append(stream, [newEvent()], { expectedRevision: 0 }), stream);

        const created = await store.append(stream, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        expect(created.nextRevision).toBe(1);
        await expectConflict(store.append(stream, [newEvent()], { expectedRevision: 0 }), stream);
        await expectConflict(store.append(stream, [newEvent()], { expectedRevision: 2 }), stream);

        const next = await store.append(stream, [newEvent(), newEvent()], { expectedRevision: created.nextRevision });
        expect(next.nextRevision).toBe(3);
        expect((await store.readStream(stream)).map((e) => e.revision)).toEqual([0, 1, 2, 3]);
      });

      it('a conflicting append of several events writes none of them', async () => {
        const stream = streamName();
        await appendOne(stream, 'no_stream');
        await expectConflict(store.append(stream, [newEvent(), newEvent()], { expectedRevision: 5 }), stream);
        expect(await store.readStream(stream)).toHaveLength(1);
      });

      it('a conflicting append made together with others fails alone, and writes none of its events', async () => {
        const [conflicting, single, several] = [streamName(), streamName(), streamName()];
        await appendOne(conflicting, 'no_stream');
        const settled = await Promise.allSettled([
          store.append(single, [newEvent()], { expectedRevision: 'no_stream' }),
          store.append(conflicting, [newEvent(), newEvent()], { expectedRevision: 'no_stream' }),
          store.append(conflicting, [newEvent()], { expectedRevision: 7 }),
          store.append(several, [newEvent(), newEvent()], { expectedRevision: 'no_stream' }),
        ]);
        expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
        for (const failed of [settled[1], settled[2]]) expect((failed as PromiseRejectedResult).reason).toBeInstanceOf(Conflict);
        expect(await store.readStream(single)).toHaveLength(1);
        expect(await store.readStream(conflicting)).toHaveLength(1);
        expect(await store.readStream(several)).toHaveLength(2);
      });

      it('of concurrent appends with the same expected revision exactly one wins', async () => {
        const stream = streamName();
        await appendOne(stream, 'no_stream');
        const attempts = Array.from({ length: 10 }, () => store.append(stream, [newEvent()], { expectedRevision: 0 }));
        const settled = await Promise.allSettled(attempts);

        const won = settled.filter((s) => s.status === 'fulfilled');
        const lost = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
        expect(won).toHaveLength(1);
        for (const loss of lost) expect(loss.reason).toBeInstanceOf(Conflict);
        expect(await store.readStream(stream)).toHaveLength(2);
      });

      it("of concurrent 'no_stream' appends exactly one creates the stream", async () => {
        const stream = streamName();
        const settled = await Promise.allSettled(
          Array.from({ length: 5 }, () => store.append(stream, [newEvent()], { expectedRevision: 'no_stream' })),
        );
        expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
        expect(await store.readStream(stream)).toHaveLength(1);
      });
    });

    describe('appendThen', () => {
      it('writes the claim, then each dependent append, after it in the log', async () => {
        const [claim, first, second] = [streamName('claim'), streamName(), streamName()];
        await appendOne(claim, 'no_stream');
        const events = [newEvent('Claimed'), newEvent(), newEvent(), newEvent()];
        const result = await store.appendThen({ stream: claim, events: [events[0]!], expectedRevision: 0 }, [
          { stream: first, events: [events[1]!], expectedRevision: 'no_stream' },
          { stream: second, events: [events[2]!, events[3]!], expectedRevision: 'no_stream' },
        ]);

        expect(result.first.nextRevision).toBe(1);
        expect(result.then.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled']);
        const [firstResult, secondResult] = result.then.map((outcome) => (outcome as PromiseFulfilledResult<AppendResult>).value);
        expect(secondResult!.nextRevision).toBe(1);
        expect(result.first.position < firstResult!.position).toBe(true);
        expect(result.first.position < secondResult!.position).toBe(true);
        expect((await store.readStream(claim)).map((e) => e.id)).toEqual([expect.any(String), events[0]!.id]);
        expect((await store.readStream(first)).map((e) => e.id)).toEqual([events[1]!.id]);
        expect((await store.readStream(second)).map((e) => e.id)).toEqual([events[2]!.id, events[3]!.id]);
      });

      it('writes nothing when the claim conflicts, and rejects with its Conflict', async () => {
        const [claim, dependent] = [streamName('claim'), streamName()];
        await appendOne(claim, 'no_stream');
        await appendOne(claim, 0); // another writer took revision 1 meanwhile
        await expectConflict(
          store.appendThen({ stream: claim, events: [newEvent('Claimed')], expectedRevision: 0 }, [{ stream: dependent, events: [newEvent()], expectedRevision: 'no_stream' }]),
          claim,
        );
        expect(await store.readStream(claim)).toHaveLength(2);
        expect(await store.readStream(dependent)).toEqual([]);
      });

      it('rejects an empty dependent or a negative revision with a RangeError and writes nothing, not even the claim', async () => {
        const [claim, dependent] = [streamName('claim'), streamName()];
        await expect(
          store.appendThen({ stream: claim, events: [newEvent('Claimed')], expectedRevision: 'no_stream' }, [{ stream: dependent, events: [], expectedRevision: 'no_stream' }]),
        ).rejects.toBeInstanceOf(RangeError);
        await expect(
          store.appendThen({ stream: claim, events: [newEvent('Claimed')], expectedRevision: 'no_stream' }, [{ stream: dependent, events: [newEvent()], expectedRevision: -2 }]),
        ).rejects.toBeInstanceOf(RangeError);
        expect(await store.readStream(claim)).toEqual([]);
      });

      it('a failing dependent fails alone: the claim and the other dependents are written', async () => {
        const [claim, taken, fresh] = [streamName('claim'), streamName(), streamName()];
        await appendOne(taken, 'no_stream');
        const result = await store.appendThen({ stream: claim, events: [newEvent('Claimed')], expectedRevision: 'no_stream' }, [
          { stream: taken, events: [newEvent()], expectedRevision: 'no_stream' },
          { stream: fresh, events: [newEvent()], expectedRevision: 'no_stream' },
        ]);
        expect(result.then.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled']);
        expect((result.then[0] as PromiseRejectedResult).reason).toBeInstanceOf(Conflict);
        expect(await store.readStream(claim)).toHaveLength(1);
        expect(await store.readStream(taken)).toHaveLength(1);
        expect(await store.readStream(fresh)).toHaveLength(1);
      });
    });

    describe('readAll and the audit hash chain', () => {
      async function readWhole(filter = true): Promise<RecordedEvent[]> {
        const all: RecordedEvent[] = [];
        for (let from: RecordedEvent['position'] | 'start' = 'start'; ; ) {
          const page = await store.readAll({ from, maxCount: 2, ...(filter ? { filter: { streamPrefixes: [prefix] } } : {}) });
          if (page.length === 0) return all;
          all.push(...page);
          from = page.at(-1)!.position;
        }
      }

      it('pages through the log in order, strictly after `from`, filter respected, [] at the head', async () => {
        const [a, b] = [streamName('a'), streamName('b')];
        await store.append(a, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        await store.append(`other-${randomUUID()}`, [newEvent()], { expectedRevision: 'no_stream' });
        await store.append(b, [newEvent()], { expectedRevision: 'no_stream' });
        await store.append(a, [newEvent()], { expectedRevision: 1 });
        const read = await readWhole();
        expect(read.map((e) => `${e.stream === a ? 'a' : 'b'}${e.revision}`)).toEqual(['a0', 'a1', 'b0', 'a2']);
        expect(await store.readAll({ from: read.at(-1)!.position, maxCount: 10, filter: { streamPrefixes: [prefix] } })).toEqual([]);
        expect((await store.readAll({ from: read[1]!.position, maxCount: 1, filter: { streamPrefixes: [prefix] } }))[0]!.id).toBe(read[2]!.id);
      });

      it('chains every appended event, and an edited event breaks the chain', async () => {
        const stream = streamName();
        await store.append(stream, [newEvent(), newEvent('Other', { n: 1.5, list: ['x', null] })], { expectedRevision: 'no_stream' });
        await Promise.all([store.append(stream, [newEvent()], { expectedRevision: 'any' }), store.append(streamName(), [newEvent()], { expectedRevision: 'any' })]);
        // The log scope chains over everything in the log; the stream scope per stream.
        const events = store.chainScope === 'log' ? await readWhole(false) : await store.readStream(stream);
        expect(events.every((event) => typeof event.metadata.hash === 'string')).toBe(true);
        const check = new ChainCheck(store.chainScope);
        for (const event of events) check.add(event);
        expect(check.firstBreak).toBeNull();
        expect(check.head).toBe(events.at(-1)!.metadata.hash);

        const edited = new ChainCheck(store.chainScope);
        for (const [index, event] of events.entries()) edited.add(index === 1 ? { ...event, data: { ...event.data, n: 2 } } : event);
        expect(edited.firstBreak?.position).toBe(events[1]!.position);
      });
    });

    describe('readStreams and checkChain (audit verification)', () => {
      it('gives every stream of the prefix whole, exactly once, a page at a time', async () => {
        const [a, b, long] = [streamName('a'), streamName('b'), streamName('long')];
        await store.append(a, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        await store.append(`other-${randomUUID()}`, [newEvent()], { expectedRevision: 'no_stream' });
        await store.append(long, [newEvent(), newEvent(), newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        await store.append(b, [newEvent()], { expectedRevision: 'no_stream' });
        await store.append(a, [newEvent()], { expectedRevision: 1 });
        const read: StreamEvent[][] = [];
        let pages = 0;
        for (let from: string | null = 'start'; from !== null; pages++) {
          const page = await store.readStreams({ prefix, from, maxCount: 2 });
          read.push(...page.streams);
          from = page.next;
        }
        expect(pages).toBeGreaterThan(1);
        const byName = new Map(read.map((events) => [events[0]!.stream, events]));
        expect(read).toHaveLength(3);
        expect([...byName.keys()].sort()).toEqual([a, b, long].sort());
        for (const [name, events] of byName) {
          expect(events.every((event) => event.stream === name)).toBe(true);
          expect(events.map((event) => event.revision)).toEqual([...events.keys()]);
          // Without their metadata (verification folds the data; the chain check covers the rest).
          expect(events).toEqual((await store.readStream(name)).map(({ metadata: _metadata, ...event }) => event));
          expect(events.some((event) => 'metadata' in event)).toBe(false);
        }
        expect(byName.get(long)).toHaveLength(5);
        expect(await store.readStreams({ prefix: `${prefix}none-`, from: 'start', maxCount: 10 })).toEqual({ streams: [], next: null });
      });

      it('keeps data with quotes, backslashes, escapes and text beyond ASCII, in appends committed together, and its chain holds', async () => {
        const awkward = { quote: 'say "hi"', backslash: 'C:\\temp\\new', escapes: 'line\nbreak\ttab\u0001', accents: 'Crème brûlée, Ærø', emoji: '😀 👍🏽', nested: { list: ['"', '\\', '', null, 1.25e-7], empty: {} } };
        const streams = [streamName(), streamName(), streamName()];
        // Three appends at once: a store that commits what is queued together writes them in one statement.
        await Promise.all(streams.map((stream, index) => store.append(stream, [newEvent('Awkward', { ...awkward, index }), newEvent('Awkward', { index, second: awkward })], { expectedRevision: 'no_stream' })));
        for (const [index, stream] of streams.entries()) {
          expect((await store.readStream(stream)).map((event) => event.data)).toEqual([{ ...awkward, index }, { index, second: awkward }]);
        }
        expect((await store.checkChain({ until: (await store.headPosition())! })).firstBreak).toBeNull();
      });

      it('re-checks the chain up to the position given, as ChainCheck does over the events read', async () => {
        const stream = streamName();
        await store.append(stream, [newEvent(), newEvent('Other', { n: 1.5, list: ['x', null], 10: 'ten', 9: 'nine' })], { expectedRevision: 'no_stream' });
        const middle = (await store.readStream(stream))[0]!.position;
        await store.append(stream, [newEvent()], { expectedRevision: 1 });
        const head = (await store.headPosition())!;
        const whole = await store.checkChain({ until: head });
        expect(whole.firstBreak).toBeNull();
        expect(whole.events).toBe(whole.chained + whole.unchained);
        const check = new ChainCheck(store.chainScope);
        let events = 0;
        for (let from: RecordedEvent['position'] | 'start' = 'start'; ; ) {
          const page = (await store.readAll({ from, maxCount: 500 })).filter((event) => event.position <= head);
          if (page.length === 0) break;
          for (const event of page) check.add(event);
          events += page.length;
          from = page.at(-1)!.position;
          if (from === head) break;
        }
        expect(whole).toEqual({ events, chained: check.chained, unchained: check.unchained, head: check.head, firstBreak: null });
        const early = await store.checkChain({ until: middle });
        // Up to the first event of the stream: not its two later ones (nor what other writers appended meanwhile).
        expect(early.events).toBeLessThanOrEqual(whole.events - 2);
        expect(early.firstBreak).toBeNull();
        expect(await store.checkChain({ until: null })).toMatchObject({ events: 0, chained: 0, firstBreak: null });
      });
    });

    describe('appendThen with groups (reservations before the record they protect)', () => {
      it('writes a claim group and a dependent group, each in order', async () => {
        const [reservation, counter, record] = [streamName('reservation'), streamName('counter'), streamName()];
        const result = await store.appendThen(
          [
            { stream: counter, events: [newEvent('Counted')], expectedRevision: 'no_stream' },
            { stream: reservation, events: [newEvent('Reserved')], expectedRevision: 'no_stream' },
          ],
          [[{ stream: reservation, events: [newEvent('Confirmed')], expectedRevision: 0 }, { stream: record, events: [newEvent()], expectedRevision: 'no_stream' }]],
        );
        expect(result.then.map((outcome) => outcome.status)).toEqual(['fulfilled']);
        const recordResult = (result.then[0] as PromiseFulfilledResult<AppendResult>).value;
        expect(result.first.position < recordResult.position).toBe(true);
        expect((await store.readStream(reservation)).map((e) => e.type)).toEqual(['Reserved', 'Confirmed']);
        expect((await store.readStream(record)).map((e) => e.position)).toEqual([recordResult.position]);
      });

      it('a claim group with a conflicting reservation rejects with its Conflict and writes no dependent', async () => {
        const [free, taken, record] = [streamName('free'), streamName('taken'), streamName()];
        await appendOne(taken, 'no_stream', 'Reserved');
        await expectConflict(
          store.appendThen(
            [
              { stream: free, events: [newEvent('Reserved')], expectedRevision: 'no_stream' },
              { stream: taken, events: [newEvent('Reserved')], expectedRevision: 'no_stream' },
            ],
            [{ stream: record, events: [newEvent()], expectedRevision: 'no_stream' }],
          ),
          taken,
        );
        expect(await store.readStream(record)).toEqual([]);
        expect(await store.readStream(taken)).toHaveLength(1);
      });

      it('a claim group that conflicts writes none of its appends where atomicGroups, and the appends before the conflict otherwise', async () => {
        const [counter, taken] = [streamName('counter'), streamName('taken')];
        await appendOne(taken, 'no_stream', 'Reserved');
        await expectConflict(
          store.appendThen(
            [
              { stream: counter, events: [newEvent('Counted')], expectedRevision: 'no_stream' },
              { stream: taken, events: [newEvent('Reserved')], expectedRevision: 'no_stream' },
            ],
            [],
          ),
          taken,
        );
        expect(await store.readStream(counter)).toHaveLength(store.atomicGroups ? 0 : 1);
      });

      it('a dependent group fails as a whole with the Conflict of its reservation: its record is not written, the others are', async () => {
        const [claim, taken, lost, kept] = [streamName('claim'), streamName('taken'), streamName(), streamName()];
        await appendOne(taken, 'no_stream', 'Reserved');
        const result = await store.appendThen({ stream: claim, events: [newEvent('Claimed')], expectedRevision: 'no_stream' }, [
          [
            { stream: taken, events: [newEvent('Reserved')], expectedRevision: 'no_stream' },
            { stream: lost, events: [newEvent()], expectedRevision: 'no_stream' },
          ],
          [{ stream: kept, events: [newEvent()], expectedRevision: 'no_stream' }],
        ]);
        expect(result.then.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled']);
        expect((result.then[0] as PromiseRejectedResult).reason).toBeInstanceOf(Conflict);
        expect((result.then[0] as PromiseRejectedResult).reason.stream).toBe(taken);
        expect(await store.readStream(lost)).toEqual([]);
        expect(await store.readStream(kept)).toHaveLength(1);
      });

      it('of concurrent claims of one reservation exactly one group is written', async () => {
        const reservation = streamName('reservation');
        const records = Array.from({ length: 6 }, () => streamName());
        const settled = await Promise.allSettled(
          records.map((record) =>
            store.appendThen([{ stream: reservation, events: [newEvent('Reserved')], expectedRevision: 'no_stream' }, { stream: record, events: [newEvent()], expectedRevision: 'no_stream' }], []),
          ),
        );
        expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
        for (const lost of settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected')) expect(lost.reason).toBeInstanceOf(Conflict);
        const written = await Promise.all(records.map((record) => store.readStream(record)));
        expect(written.filter((events) => events.length > 0)).toHaveLength(1);
      });

      it('rejects a group with an empty append and writes nothing', async () => {
        const [claim, record] = [streamName('claim'), streamName()];
        await expect(
          store.appendThen([{ stream: claim, events: [newEvent('Claimed')], expectedRevision: 'no_stream' }, { stream: record, events: [], expectedRevision: 'no_stream' }], []),
        ).rejects.toBeInstanceOf(RangeError);
        expect(await store.readStream(claim)).toEqual([]);
      });
    });

    describe('claim streams (reservations, counters: port.ts CLAIM_STREAM_PREFIXES)', () => {
      const claimName = (kind: 'reservation-' | 'autonumber-') => `${kind}${prefix}${randomUUID()}`;

      it('keep expected revisions, read backwards for their last event, and conflict as any stream', async () => {
        const claim = claimName('reservation-');
        await store.append(claim, [newEvent('ValueReserved')], { expectedRevision: 'no_stream' });
        await expectConflict(store.append(claim, [newEvent('ValueReserved')], { expectedRevision: 'no_stream' }), claim);
        await store.append(claim, [newEvent('ValueReleased'), newEvent('ValueReserved')], { expectedRevision: 0 });
        await expectConflict(store.append(claim, [newEvent('ValueReserved')], { expectedRevision: 0 }), claim);
        const [last] = await store.readStream(claim, { direction: 'backwards', maxCount: 1 });
        expect([last!.type, last!.revision]).toEqual(['ValueReserved', 2]);
        expect((await store.readStream(claim)).map((event) => event.type)).toEqual(['ValueReserved', 'ValueReleased', 'ValueReserved']);
      });

      it('commit with the records they protect: a group whose claim conflicts writes neither where atomicGroups', async () => {
        const [counter, taken, record] = [claimName('autonumber-'), claimName('reservation-'), streamName()];
        await store.append(taken, [newEvent('ValueReserved')], { expectedRevision: 'no_stream' });
        const result = await store.appendThen({ stream: counter, events: [newEvent('NumbersReserved')], expectedRevision: 'no_stream' }, [
          [
            { stream: taken, events: [newEvent('ValueReserved')], expectedRevision: 'no_stream' },
            { stream: record, events: [newEvent()], expectedRevision: 'no_stream' },
          ],
        ]);
        expect((result.then[0] as PromiseRejectedResult).reason).toBeInstanceOf(Conflict);
        expect(await store.readStream(record)).toEqual([]);
        expect(await store.readStream(counter)).toHaveLength(1);
        const written = await store.appendThen([{ stream: claimName('reservation-'), events: [newEvent('ValueReserved')], expectedRevision: 'no_stream' }, { stream: record, events: [newEvent()], expectedRevision: 'no_stream' }], []);
        // The group's position is its record's, which a writer waits to see projected.
        expect(written.first.position).toBe((await store.readStream(record))[0]!.position);
      });
    });

    describe('subscribeToAll', () => {
      it('replays from the start in log order, only the filtered streams', async () => {
        const written = await appendAcross(4);
        const received = await take(subscribe('start'), 4, waitMs);
        expect(received.map((e) => e.id)).toEqual(written.map((w) => w.id));
        expectIncreasing(received.map((e) => e.position));
      });

      it('starts strictly after a given position', async () => {
        const stream = streamName();
        await store.append(stream, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        const [, second] = await store.readStream(stream);
        const later = await appendOne(stream);

        const received = await take(subscribe(second!.position), 1, waitMs);
        expect(received.map((e) => e.id)).toEqual([later.event.id]);
      });

      it('delivers only streams starting with one of the prefixes', async () => {
        const one = `${prefix}one-`;
        const two = `${prefix}two-`;
        const expected: string[] = [];
        expected.push((await appendOne(`${one}${randomUUID()}`)).event.id);
        await appendOne(`${prefix}other-${randomUUID()}`);
        expected.push((await appendOne(`${two}${randomUUID()}`)).event.id);
        await appendOne(`${prefix}other-${randomUUID()}`);
        // The last one proves the others in between were skipped, not still on their way.
        expected.push((await appendOne(`${one}${randomUUID()}`)).event.id);

        const received = await take(subscribe('start', [one, two]), 3, waitMs);
        expect(received.map((e) => e.id)).toEqual(expected);
      });

      it('turns live and receives later appends', async () => {
        const stream = streamName();
        const early = await appendOne(stream);
        const subscription = subscribe('start');
        const iterator = subscription[Symbol.asyncIterator]();
        expect((await nextWithin(iterator, waitMs)).id).toBe(early.event.id);

        const pending = nextWithin(iterator, waitMs);
        const late = await appendOne(stream);
        const received = await pending;
        expect(received.id).toBe(late.event.id);
        expect(received.revision).toBe(1);
      });

      it('ends the iteration when closed while waiting', async () => {
        await appendOne(streamName());
        const subscription = subscribe('start');
        const seen: string[] = [];
        const loop = (async () => {
          for await (const event of subscription) seen.push(event.id);
        })();
        await until(() => seen.length === 1, waitMs);

        await subscription.close();
        await within(loop, waitMs, 'iteration did not end after close()');
        expect(seen).toHaveLength(1);
      });
    });

    describe('persistentSubscription', () => {
      it('ensurePersistentGroup: a group made before any consumer starts there; made again, it stays', async () => {
        const group = `group-${randomUUID()}`;
        await appendOne(streamName('before'));
        await store.ensurePersistentGroup(group, { filter: { streamPrefixes: [prefix] } });
        const expected = [(await appendOne(streamName('after'))).event.id];
        await store.ensurePersistentGroup(group, { filter: { streamPrefixes: [prefix] } });
        expected.push((await appendOne(streamName('after'))).event.id);

        const received = await takeAcking(consumer(group), 2, waitMs);
        expect(received.map((e) => e.event.id)).toEqual(expected);
      });

      it('creates a missing group that starts at the current end of the log, filter respected', async () => {
        const wanted = `${prefix}wanted-`;
        await appendOne(`${wanted}${randomUUID()}`);
        const group = await startedConsumer(`group-${randomUUID()}`, { filter: { streamPrefixes: [wanted, `${prefix}probe-`] } });
        const expected: string[] = [];
        await appendOne(`${prefix}unwanted-${randomUUID()}`);
        expected.push((await appendOne(`${wanted}${randomUUID()}`)).event.id);
        await appendOne(`${prefix}unwanted-${randomUUID()}`);
        expected.push((await appendOne(`${wanted}${randomUUID()}`)).event.id);

        const received = await takeAcking(group, 2, waitMs);
        expect(received.map((e) => e.event.id)).toEqual(expected);
        expect(received.map((e) => e.retryCount)).toEqual([0, 0]);
      });

      it('answers a group checkpoint that reaches the acked events, and null for a group that does not exist', async () => {
        expect(await store.groupCheckpoint(`group-${randomUUID()}`)).toBeNull();
        const group = `group-${randomUUID()}`;
        const first = await startedConsumer(group);
        const stream = streamName();
        const written = await store.append(stream, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        await takeAcking(first, 2, waitMs);
        const deadline = Date.now() + waitMs + 10_000;
        let seen = await store.groupCheckpoint(group);
        while (!(seen?.position && seen.position >= written.position) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          seen = await store.groupCheckpoint(group);
        }
        expect(seen?.position ?? null).not.toBeNull();
        expect(seen!.position! >= written.position).toBe(true);
        await first.close();
      });

      it('hands each event to exactly one of the competing consumers', async () => {
        const group = `group-${randomUUID()}`;
        const consumers = [await startedConsumer(group), consumer(group)];
        const written = await appendAcross(20);
        const received: string[] = [];
        const done = until(() => received.length >= written.length, waitMs);
        const loops = consumers.map(async (c) => {
          for await (const delivery of c) {
            if (delivery.event.type !== PROBE) received.push(delivery.event.id);
            await delivery.ack();
          }
        });
        await done;
        for (const c of consumers) await c.close();
        await within(Promise.all(loops), waitMs, 'consumers did not end after close()');

        expect(received).toHaveLength(written.length);
        expect(new Set(received)).toEqual(new Set(written.map((w) => w.id)));
      });

      it('does not hand out acked events again to a later consumer of the group', async () => {
        const group = `group-${randomUUID()}`;
        const first = await startedConsumer(group);
        const stream = streamName();
        await store.append(stream, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        await takeAcking(first, 2, waitMs);
        await first.close();

        const later = await appendOne(stream);
        const [next] = await takeAcking(consumer(group), 1, waitMs);
        expect(next!.event.id).toBe(later.event.id);
      });

      it("hands an event out again after nack('retry'), counting the retries", async () => {
        const iterator = (await startedConsumer(`group-${randomUUID()}`))[Symbol.asyncIterator]();
        const { event } = await appendOne(streamName());

        const first = await nextWithin(iterator, waitMs);
        expect(first).toMatchObject({ retryCount: 0, event: { id: event.id } });
        await first.nack('retry', 'receiver down');
        const second = await nextWithin(iterator, waitMs);
        expect(second).toMatchObject({ retryCount: 1, event: { id: event.id } });
        await second.ack();
      });

      it("backs off before handing out a retried event again, longer each time", async () => {
        const backoff = { initialMs: 300, maxMs: 5_000 };
        const iterator = (await startedConsumer(`group-${randomUUID()}`, { retryBackoff: backoff }))[Symbol.asyncIterator]();
        await appendOne(streamName());
        const gaps: number[] = [];
        let delivery = await nextWithin(iterator, waitMs);
        for (let retry = 0; retry < 2; retry++) {
          const nackedAt = Date.now();
          await delivery.nack('retry', 'receiver down');
          delivery = await nextWithin(iterator, waitMs + 2_000);
          gaps.push(Date.now() - nackedAt);
        }
        await delivery.ack();
        expect(delivery.retryCount).toBe(2);
        // retryDelayMs: 300 ms, then 600 ms (a little slack for timers that fire early).
        expect(gaps[0]).toBeGreaterThanOrEqual(retryDelayMs(0, backoff) - 20);
        expect(gaps[1]).toBeGreaterThanOrEqual(retryDelayMs(1, backoff) - 20);
      });

      it('parks an event after maxRetryCount retries', async () => {
        const iterator = (await startedConsumer(`group-${randomUUID()}`, { maxRetryCount: 2 }))[Symbol.asyncIterator]();
        const stream = streamName();
        const { event } = await appendOne(stream);

        for (const retryCount of [0, 1, 2]) {
          const delivery = await nextWithin(iterator, waitMs);
          expect(delivery).toMatchObject({ retryCount, event: { id: event.id } });
          await delivery.nack('retry', 'still failing');
        }
        const sentinel = await appendOne(stream);
        expect((await nextWithin(iterator, waitMs)).event.id).toBe(sentinel.event.id);
      });

      it("sets an event aside on nack('park'); it counts as done for the group", async () => {
        const group = `group-${randomUUID()}`;
        const first = await startedConsumer(group);
        const stream = streamName();
        await appendOne(stream);
        const iterator = first[Symbol.asyncIterator]();
        await (await nextWithin(iterator, waitMs)).nack('park', 'cannot be handled');
        const second = await appendOne(stream);
        const next = await nextWithin(iterator, waitMs);
        expect(next.event.id).toBe(second.event.id);
        await next.ack();
        await first.close();

        const third = await appendOne(stream);
        const [afterReopen] = await takeAcking(consumer(group), 1, waitMs);
        expect(afterReopen!.event.id).toBe(third.event.id);
      });

      it('replays parked events on request, counting them, with their retries afresh', async () => {
        const group = `group-${randomUUID()}`;
        const iterator = (await startedConsumer(group, { maxRetryCount: 1 }))[Symbol.asyncIterator]();
        const parkedByHand = await appendOne(streamName());
        await (await nextWithin(iterator, waitMs)).nack('park', 'cannot be handled');
        const parkedByRetries = await appendOne(streamName());
        for (let i = 0; i < 2; i++) await (await nextWithin(iterator, waitMs)).nack('retry', 'still failing');
        // Both are done for the group: the next event is a new one.
        const sentinel = await appendOne(streamName());
        const next = await nextWithin(iterator, waitMs);
        expect(next.event.id).toBe(sentinel.event.id);
        await next.ack();

        expect(await store.replayParked(group)).toBe(2);
        const replayed = [await nextWithin(iterator, waitMs), await nextWithin(iterator, waitMs)];
        expect(new Set(replayed.map((d) => d.event.id))).toEqual(new Set([parkedByHand.event.id, parkedByRetries.event.id]));
        expect(replayed.map((d) => d.retryCount)).toEqual([0, 0]);
        for (const delivery of replayed) await delivery.ack();
        expect(await store.replayParked(group)).toBe(0);
      });

      it('hands un-acked events out again after the consumer closed (at least once)', async () => {
        const group = `group-${randomUUID()}`;
        const first = await startedConsumer(group);
        const stream = streamName();
        const events = [newEvent(), newEvent(), newEvent()];
        await store.append(stream, events, { expectedRevision: 'no_stream' });
        const iterator = first[Symbol.asyncIterator]();
        const deliveries = [await nextWithin(iterator, waitMs), await nextWithin(iterator, waitMs), await nextWithin(iterator, waitMs)];
        expect(deliveries.map((d) => d.event.id)).toEqual(events.map((e) => e.id));
        await deliveries[0]!.ack();
        await first.close();

        const again = await takeAcking(consumer(group), 2, waitMs);
        expect(new Set(again.map((d) => d.event.id))).toEqual(new Set([events[1]!.id, events[2]!.id]));
      });
    });

    /** Appends `count` single-event appends across three streams; returns them in append order. */
    async function appendAcross(count: number): Promise<NewEvent[]> {
      const streams = [streamName('x'), streamName('y'), streamName('z')];
      const written: NewEvent[] = [];
      for (let i = 0; i < count; i++) written.push((await appendOne(streams[i % streams.length]!)).event);
      return written;
    }
  });
}

/** Probe events make sure a new group exists before a test appends (see startedConsumer). */
const PROBE = 'GroupProbe';
/** Retries in the suite wait little, unless a test is about the wait. */
const QUICK_RETRIES = { initialMs: 10, maxMs: 50 };

export function newEvent(type = 'Happened', data: Record<string, unknown> = { at: randomUUID() }): NewEvent {
  const actionId = randomUUID();
  return {
    id: randomUUID(),
    type,
    data,
    metadata: {
      source: 'api',
      actor: { type: 'apiKey', id: randomUUID(), name: 'contract test key' },
      actionId,
      correlationId: actionId,
      causationId: actionId,
    },
  };
}

/** Resolves or fails the test with `message` after `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} (waited ${ms} ms)`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function nextWithin<T>(iterator: AsyncIterator<T>, ms: number): Promise<T> {
  const result = await within(iterator.next(), ms, 'no event arrived');
  if (result.done) throw new Error('the iteration ended early');
  return result.value;
}

export async function take<T>(iterable: AsyncIterable<T>, count: number, ms: number): Promise<T[]> {
  const iterator = iterable[Symbol.asyncIterator]();
  const items: T[] = [];
  while (items.length < count) items.push(await nextWithin(iterator, ms));
  return items;
}

export async function takeAcking(subscription: PersistentSubscription, count: number, ms: number): Promise<PersistentEvent[]> {
  const deliveries = await take(subscription, count, ms);
  for (const delivery of deliveries) await delivery.ack();
  return deliveries;
}

function expectIncreasing(positions: string[]): void {
  for (let i = 1; i < positions.length; i++) expect(positions[i - 1]! < positions[i]!).toBe(true);
}

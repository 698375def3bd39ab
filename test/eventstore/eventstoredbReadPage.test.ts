import type { AllStreamResolvedEvent } from '@eventstore/db-client';
import { describe, expect, it } from 'vitest';
import { toEsdbPosition } from '../../src/eventstore/eventstoredb/mapping.js';
import { readFullPage, type ReadForwards } from '../../src/eventstore/eventstoredb/readPage.js';
import type { Position } from '../../src/eventstore/position.js';

/**
 * readAll's paging on EventStoreDB as a pure function over a log given as data: $all with system
 * events and other streams between ours, served in pages the way the client's readAll iterates
 * them (inclusive start, at most maxCount items). A page shorter than asked must mean the end.
 */

const metadata = { source: 'api', actor: { type: 'apiKey', id: 'k1', name: 'k' }, actionId: 'a', correlationId: 'c', causationId: 'c' };

function item(n: number, stream: string, type = 'RecordCreated'): AllStreamResolvedEvent {
  return {
    event: {
      streamId: stream,
      id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      isJson: true,
      revision: 0n,
      type,
      created: new Date(1_700_000_000_000 + n),
      data: { n },
      metadata,
      position: { commit: BigInt(n * 100), prepare: BigInt(n * 100) },
    },
  } as unknown as AllStreamResolvedEvent;
}

/** The log as the server would iterate it, counting the reads asked of it. */
function fakeLog(items: AllStreamResolvedEvent[]): { read: ReadForwards; reads: number[] } {
  const reads: number[] = [];
  const read: ReadForwards = (from, count) => {
    reads.push(count);
    const start = from === 'start' ? 0n : toEsdbPosition(from).commit;
    const page = items.filter((resolved) => resolved.event!.position!.commit >= start).slice(0, count);
    return (async function* () {
      yield* page;
    })();
  };
  return { read, reads };
}

/** Ours (record-…) every `every`-th item, the rest other applications' streams and system events. */
function mixedLog(length: number, every: number): AllStreamResolvedEvent[] {
  return Array.from({ length }, (_, index) => {
    const n = index + 1;
    if (n % every === 0) return item(n, `record-${n}`);
    return n % 2 === 0 ? item(n, `$persistentsubscription-webhooks-checkpoint`, '$SubscriptionCheckpoint') : item(n, `orders-${n}`, 'OrderPlaced');
  });
}

async function pageNumbers(read: ReadForwards, from: Position | 'start', maxCount: number): Promise<number[]> {
  const page = await readFullPage(read, from, maxCount, { streamPrefixes: ['record-'] });
  return page.map((event) => (event.data as { n: number }).n);
}

describe('readAll pages on EventStoreDB', () => {
  it('fills the page across server pages that hold mostly other events', async () => {
    const { read, reads } = fakeLog(mixedLog(100, 10)); // ours: 10, 20, ..., 100
    expect(await pageNumbers(read, 'start', 3)).toEqual([10, 20, 30]);
    // Several server reads made one page: before, the first match returned a page of one.
    expect(reads.length).toBeGreaterThan(1);
  });

  it('a short page is the end of the log, and paging by the last position reads every event once', async () => {
    const { read } = fakeLog(mixedLog(103, 7));
    const seen: number[] = [];
    let from: Position | 'start' = 'start';
    for (;;) {
      const page = await readFullPage(read, from, 4, { streamPrefixes: ['record-'] });
      seen.push(...page.map((event) => (event.data as { n: number }).n));
      if (page.length < 4) break;
      from = page.at(-1)!.position;
    }
    expect(seen).toEqual(Array.from({ length: 14 }, (_, index) => (index + 1) * 7));
  });

  it('never hands out the event at `from` again (the server start is inclusive)', async () => {
    const { read } = fakeLog(mixedLog(40, 5));
    const [first] = await readFullPage(read, 'start', 1, { streamPrefixes: ['record-'] });
    expect(await pageNumbers(read, first!.position, 2)).toEqual([10, 15]);
  });

  it('answers [] at the head and when nothing of ours follows, after reading to the end', async () => {
    const { read } = fakeLog(mixedLog(50, 1_000));
    expect(await pageNumbers(read, 'start', 10)).toEqual([]);
    const whole = fakeLog(mixedLog(20, 20));
    const [last] = await readFullPage(whole.read, 'start', 5, { streamPrefixes: ['record-'] });
    expect(await pageNumbers(whole.read, last!.position, 5)).toEqual([]);
  });

  it('without a filter, only system events are left out', async () => {
    const { read } = fakeLog(mixedLog(6, 3));
    const page = await readFullPage(read, 'start', 10, undefined);
    expect(page.map((event) => event.stream)).toEqual(['orders-1', 'record-3', 'orders-5', 'record-6']);
  });

  it('refuses a maxCount that is not a whole number from 1', async () => {
    const { read } = fakeLog([]);
    await expect(readFullPage(read, 'start', 0, undefined)).rejects.toThrow(RangeError);
  });
});

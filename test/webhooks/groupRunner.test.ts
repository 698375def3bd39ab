import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { PersistentEvent, PersistentSubscription } from '../../src/eventstore/port.js';
import { runGroup } from '../../src/webhooks/groupRunner.js';
import { until } from '../support/until.js';

/**
 * Issue 22 item 6: a dropped subscription is re-made with a growing wait, logged as an error, and
 * the runner reports not ready until it is back. The subscriptions here are scripted stand-ins
 * for the port (what an adapter hands out when its server drops the call).
 */

function scripted(script: { fails: boolean; events: string[] }): PersistentSubscription & { closed: boolean } {
  let closed = false;
  const subscription = {
    get closed() {
      return closed;
    },
    connected: () => !closed,
    async close() {
      closed = true;
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<PersistentEvent> {
      for (const id of script.events) yield { event: { id } as PersistentEvent['event'], retryCount: 0, ack: async () => undefined, nack: async () => undefined };
      if (script.fails) throw new Error('connection dropped');
      while (!closed) await new Promise((resolve) => setTimeout(resolve, 5));
    },
  };
  return subscription;
}

/** A subscription handing out what `push` gives it, as soon as it is asked. */
function fed(): PersistentSubscription & { push(...ids: string[]): void } {
  const queue: string[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  return {
    push(...ids: string[]) {
      queue.push(...ids);
      wake?.();
    },
    connected: () => !closed,
    async close() {
      closed = true;
      wake?.();
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<PersistentEvent> {
      while (!closed) {
        const id = queue.shift();
        if (id === undefined) {
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        yield { event: { id } as PersistentEvent['event'], retryCount: 0, ack: async () => undefined, nack: async () => undefined };
      }
    },
  };
}

describe('runGroup', () => {
  it('re-opens a failed subscription after a growing wait, logs an error, and is not ready meanwhile', async () => {
    const errors: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line).msg) });
    const opened: number[] = [];
    const handled: string[] = [];
    const scripts = [
      { fails: true, events: [] },
      { fails: true, events: [] },
      { fails: false, events: ['b'] },
    ];
    let readyWhileDown = true;
    const runner = runGroup({
      open: () => {
        opened.push(Date.now());
        if (opened.length === 2) readyWhileDown = runner.ready();
        return scripted(scripts[opened.length - 1]!);
      },
      handle: async (batch) => void handled.push(...batch.map((item) => item.event.id)),
      maxBatch: 10,
      logger,
      reconnect: { initialMs: 100, maxMs: 1_000 },
    });
    await until(() => handled.includes('b'), 20_000);
    expect(runner.ready()).toBe(true);
    expect(readyWhileDown).toBe(false);
    expect(handled).toEqual(['b']);
    expect(errors.filter((message) => /subscription failed; reconnecting/.test(message))).toHaveLength(2);
    // 100 ms after the first failure, then 200 ms after the second.
    expect(opened[1]! - opened[0]!).toBeGreaterThanOrEqual(90);
    expect(opened[2]! - opened[1]!).toBeGreaterThanOrEqual(190);
    await runner.stop();
    expect(runner.ready()).toBe(false);
  });

  it('tries again when joining the group itself fails (a store busy at start), instead of giving up for good', async () => {
    const errors: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line).msg) });
    const handled: string[] = [];
    let attempts = 0;
    const runner = runGroup({
      open: () => {
        attempts++;
        if (attempts === 1) throw new Error('SQLITE_BUSY: database is locked');
        return scripted({ fails: false, events: ['a'] });
      },
      handle: async (batch) => void handled.push(...batch.map((item) => item.event.id)),
      maxBatch: 10,
      logger,
      reconnect: { initialMs: 50, maxMs: 500 },
    });
    await until(() => handled.includes('a'), 20_000);
    expect(attempts).toBe(2);
    expect(errors.filter((message) => /subscription failed; reconnecting/.test(message))).toHaveLength(1);
    await runner.stop();
  });

  describe('gathering events between small batches (gatherMs)', () => {
    const quiet = pino({ level: 'silent' });

    it('given a quiet group, when an event comes, then it is handled at once; events that come meanwhile wait and are handled together', async () => {
      const subscription = fed();
      const batches: { ids: string[]; at: number }[] = [];
      const runner = runGroup({ open: () => subscription, handle: async (batch) => void batches.push({ ids: batch.map((item) => item.event.id), at: Date.now() }), maxBatch: 10, gatherMs: 1_000, logger: quiet });
      await until(() => runner.ready(), 5_000);
      const pushedAt = Date.now();
      subscription.push('a');
      await until(() => batches.length === 1, 5_000);
      expect(batches[0]!.at - pushedAt).toBeLessThan(500);
      subscription.push('b');
      await new Promise((resolve) => setTimeout(resolve, 50));
      subscription.push('c');
      await until(() => batches.length === 2, 5_000);
      expect(batches.map(({ ids }) => ids)).toEqual([['a'], ['b', 'c']]);
      expect(batches[1]!.at - batches[0]!.at).toBeGreaterThanOrEqual(950);
      await runner.stop();
    });

    it('given a full batch, when more events are ready, then they are taken without a wait; stop ends a wait at once', async () => {
      const subscription = fed();
      subscription.push('a', 'b', 'c');
      const batches: string[][] = [];
      const runner = runGroup({ open: () => subscription, handle: async (batch) => void batches.push(batch.map((item) => item.event.id)), maxBatch: 2, gatherMs: 10_000, logger: quiet });
      await until(() => batches.length === 2, 2_000, 'the batch after a full one');
      expect(batches).toEqual([['a', 'b'], ['c']]);
      // [c] was not full: the runner now waits 10 s, which stop cuts short.
      const stopping = Date.now();
      await runner.stop();
      expect(Date.now() - stopping).toBeLessThan(1_000);
    });
  });
});

import { expect } from 'vitest';
import type { EventStore } from '../../src/eventstore/port.js';

/**
 * For the tests that a consumer of the log lets the event loop turn between its batches
 * (src/eventstore/readyBatches.ts): a log to catch up with, a counter of the loop's turns, and the
 * check over the batches a projection saw.
 */

const metadata = { source: 'api' as const, actor: { type: 'system' as const, id: 't', name: 't' }, actionId: 'a', correlationId: 'a', causationId: 'a' };

/** `streams` streams `record-<n>` of `perStream` events each. */
export async function seedLog(events: EventStore, streams: number, perStream: number): Promise<void> {
  for (let stream = 0; stream < streams; stream++) {
    const batch = Array.from({ length: perStream }, (_, n) => ({ id: crypto.randomUUID(), type: 'Noted', data: { n }, metadata }));
    await events.append(`record-${stream}`, batch, { expectedRevision: 'no_stream' });
  }
}

/** Counts the event loop's turns (an immediate that sets the next) until stopped. */
export function turnCounter(): { turns(): number; stop(): void } {
  let turns = 0;
  let spinning = true;
  const spin = () => {
    turns++;
    if (spinning) setImmediate(spin);
  };
  setImmediate(spin);
  return { turns: () => turns, stop: () => (spinning = false) };
}

/** A batch as a projection saw it: the turns counted by then, and its size. */
export interface SeenBatch {
  turns: number;
  events: number;
}

/** A turn came between each two full batches (the log was all there), of which there were at least three. */
export function expectTurnsBetweenBatches(seen: SeenBatch[]): void {
  const full = seen.filter((batch) => batch.events > 1);
  expect(full.length).toBeGreaterThanOrEqual(3);
  for (let at = 1; at < full.length; at++) expect(full[at]!.turns).toBeGreaterThan(full[at - 1]!.turns);
}

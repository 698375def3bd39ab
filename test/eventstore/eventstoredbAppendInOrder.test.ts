import { describe, expect, it } from 'vitest';
import { Conflict } from '../../src/core/errors.js';
import { appendInOrder } from '../../src/eventstore/eventstoredb/appendInOrder.js';
import type { AppendResult, StreamAppend } from '../../src/eventstore/port.js';

/**
 * appendThen on EventStoreDB 24 (no multi-stream transaction): what is written when an append
 * fails, held to the server's rule that an append is atomic on its own stream only.
 */

const part = (stream: string): StreamAppend => ({ stream, events: [], expectedRevision: 'any' });

function server(failing: string[]) {
  const written: string[] = [];
  const append = async (append: StreamAppend): Promise<AppendResult> => {
    await new Promise((resolve) => setImmediate(resolve));
    if (failing.includes(append.stream)) throw new Conflict(append.stream, 'any', '0');
    written.push(append.stream);
    return { position: String(written.length), nextRevision: 0 };
  };
  return { append, written };
}

describe('appendInOrder', () => {
  it.each([
    {
      when: 'everything succeeds',
      failing: [],
      written: ['counter', 'name', 'claim-a', 'claim-b', 'record-a', 'record-b'],
      then: ['fulfilled', 'fulfilled'],
    },
    {
      // The reservation is acknowledged before any dependent is sent: a failure there writes nothing else.
      when: 'the first group fails at its second append',
      failing: ['name'],
      written: ['counter'],
      then: null,
    },
    {
      // A dependent group stops at its failure and keeps what it wrote before it; the others go on.
      when: "a dependent's record fails",
      failing: ['record-a'],
      written: ['counter', 'name', 'claim-a', 'claim-b', 'record-b'],
      then: ['rejected', 'fulfilled'],
    },
    {
      when: "a dependent's claim fails",
      failing: ['claim-b'],
      written: ['counter', 'name', 'claim-a', 'record-a'],
      then: ['fulfilled', 'rejected'],
    },
  ])('given a reservation with a name claim and two numbered records, when $when, then $written are written', async ({ failing, written, then }) => {
    const { append, written: log } = server(failing);
    const groups = [[part('counter'), part('name')], [part('claim-a'), part('record-a')], [part('claim-b'), part('record-b')]];
    const result = appendInOrder(append, groups);
    if (then === null) await expect(result).rejects.toBeInstanceOf(Conflict);
    else expect((await result).then.map((outcome) => outcome.status)).toEqual(then);
    expect([...log].sort()).toEqual([...written].sort());
  });
});

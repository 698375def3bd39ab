import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { bulkPayload, type RecordChange } from '../../src/webhooks/policy.js';
import type { EventKind } from '../../src/webhooks/port.js';
import { BulkRebuilder } from '../../src/webhooks/recoverBulk.js';

/** Rebuilding bulk events from the log (csr webhooks recover) as the live flusher chunks them. */

const actionId = randomUUID();
let second = 0;

function member(kind: EventKind, actionCount: number, object = 'tasks'): { event: RecordedEvent; change: RecordChange } {
  second += 1;
  const event = { id: randomUUID(), created: new Date(Date.UTC(2026, 0, 1, 0, 0, second)) } as RecordedEvent;
  return { event, change: { workspaceId: 'ws', object, recordId: randomUUID(), kind, source: 'import', actionId, actionCount } };
}

describe('BulkRebuilder', () => {
  it('given 1,200 creations of one action, when added in log order, then three events of 500, 500 and 200 ids come out as each is complete', () => {
    const rebuilder = new BulkRebuilder();
    const members = Array.from({ length: 1200 }, () => member('created', 1200));
    const out = members.map(({ event, change }) => rebuilder.add(event, change, true).map((rebuilt) => rebuilt.payload));
    expect(out.map((ready, index) => [index, ready.length] as const).filter(([, n]) => n > 0)).toEqual([
      [499, 1],
      [999, 1],
      [1199, 1],
    ]);
    const events = out.flat();
    expect(events.map((event) => (event.data as { count: number }).count)).toEqual([500, 500, 200]);
    expect(events.flatMap((event) => (event.data as { ids: string[] }).ids)).toEqual(members.map(({ change }) => change.recordId));
    expect(events[2]).toMatchObject({ event: 'tasks.created.bulk', object: 'tasks', source: 'import', occurredAt: members.at(-1)!.event.created.toISOString() });
    expect(rebuilder.finish()).toEqual([]);
  });

  it('given two kinds of one action, when the last member of the object arrives, then each kind goes out, and a kind the webhook does not take still counts', () => {
    const rebuilder = new BulkRebuilder();
    const updates = Array.from({ length: 10 }, () => member('updated', 30));
    const deletions = Array.from({ length: 5 }, () => member('deleted', 30));
    const creations = Array.from({ length: 15 }, () => member('created', 30));
    const sent = [...updates, ...deletions, ...creations].map(({ event, change }) => rebuilder.add(event, change, change.kind !== 'deleted').map((rebuilt) => rebuilt.payload));
    expect(sent.slice(0, -1).flat()).toEqual([]);
    const ready = sent.at(-1)!;
    expect(ready.map((event) => [event.event, (event.data as { count: number }).count])).toEqual([
      ['tasks.created.bulk', 15],
      ['tasks.updated.bulk', 10],
    ]);
  });

  it('uses the live payload, id included: the same members give the same event', () => {
    const rebuilder = new BulkRebuilder();
    const members = Array.from({ length: 21 }, () => member('updated', 21, 'contacts'));
    const [rebuilt] = members.flatMap(({ event, change }) => rebuilder.add(event, change, true));
    const live = bulkPayload(
      { workspaceId: 'ws', actionId, object: 'contacts', kind: 'updated', source: 'import' },
      members.map(({ event, change }) => ({ eventId: event.id, recordId: change.recordId, occurredAt: event.created.toISOString() })),
    );
    expect(rebuilt).toEqual({ payload: live, firstAt: members[0]!.event.created.toISOString() });
    expect(live.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('gives out at the end of the window what an action running past it left', () => {
    const rebuilder = new BulkRebuilder();
    for (const { event, change } of Array.from({ length: 30 }, () => member('created', 40, 'goals'))) expect(rebuilder.add(event, change, true)).toEqual([]);
    const [left] = rebuilder.finish().map((rebuilt) => rebuilt.payload);
    expect(left).toMatchObject({ event: 'goals.created.bulk', data: { count: 30 } });
  });
});

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventMetadata, RecordedEvent, Subscription } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';

/**
 * The subscriptions of one store instance that follow the log with one filter (the records
 * projection and the reactors of the projector thread) share the page the first of them read:
 * one read and one parse per page. Each still sees every event, new ones included.
 */

const root = mkdtempSync(join(tmpdir(), 'csr-shared-pages-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const metadata: EventMetadata = { source: 'api', actor: { type: 'system', id: 't', name: 't' }, actionId: 'a', correlationId: 'c', causationId: 'c' };
const event = (n: number) => ({ id: randomUUID(), type: 'RecordCreated', data: { n }, metadata });

async function take(subscription: Subscription, count: number): Promise<RecordedEvent[]> {
  const taken: RecordedEvent[] = [];
  for await (const received of subscription) {
    taken.push(received);
    if (taken.length === count) break;
  }
  return taken;
}

describe('subscriptions with one filter', () => {
  it('get the same parsed events from one read, and each goes on to the events appended later', async () => {
    const events = openSqliteEventStore({ path: join(root, randomUUID(), 'events.db') });
    try {
      await events.append('record-a', [event(1), event(2)], { expectedRevision: 'no_stream' });
      await events.append('other-b', [event(3)], { expectedRevision: 'no_stream' });
      const filter = { streamPrefixes: ['record-'] };
      const first = events.subscribeToAll({ from: 'start', filter });
      const second = events.subscribeToAll({ from: 'start', filter });
      const unfiltered = events.subscribeToAll({ from: 'start' });
      const [a, b, all] = await Promise.all([take(first, 2), take(second, 2), take(unfiltered, 3)]);
      expect(a.map((e) => e.data['n'])).toEqual([1, 2]);
      expect(b[0]).toBe(a[0]);
      expect(b[1]).toBe(a[1]);
      expect(all.map((e) => e.data['n'])).toEqual([1, 2, 3]);

      const later = [events.subscribeToAll({ from: a[1]!.position, filter }), events.subscribeToAll({ from: a[1]!.position, filter })];
      const pending = later.map((subscription) => take(subscription, 1));
      await events.append('record-a', [event(4)], { expectedRevision: 1 });
      for (const received of await Promise.all(pending)) expect(received.map((e) => [e.data['n'], e.revision])).toEqual([[4, 2]]);
      await Promise.all([first, second, unfiltered, ...later].map((subscription) => subscription.close()));
    } finally {
      await events.close();
    }
  });
});

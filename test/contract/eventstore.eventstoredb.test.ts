import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { openEventStoreDb } from '../../src/eventstore/eventstoredb/index.js';
import type { EventStore, PersistentEvent, RecordedEvent } from '../../src/eventstore/port.js';
import { AutoNumbers } from '../../commands/autoNumbers.js';
import { listSkippedNumbers } from '../../queries/skippedNumbers.js';
import { defaultObject } from '../../src/schema/catalogue.js';
import { eventStoreDbRules, numberedRecord } from '../support/numberAudit.js';
import { describeBackend, eventStoreBackend } from './backends.js';
import { eventStoreContract, newEvent, nextWithin } from './eventstore.contract.js';

/**
 * The EventStore contract against a real EventStoreDB (EVENTSTORE_URL, or a container when Docker
 * answers; skipped with one line otherwise, see ./backends.ts), plus what only a server we control
 * can show: subscriptions survive a server restart.
 */

const backend = await eventStoreBackend();

/** A shared server's $all is long: catch-up subscriptions from the start take longer there. */
const WAIT_MS = 20_000;

describeBackend('EventStoreDB', backend, (url) => {
  eventStoreContract('eventstoredb', () => openEventStoreDb({ connectionString: url }), { waitMs: WAIT_MS, clockSkewMs: 5_000 });

  // Needs a server this test may restart: a container, not one given by EVENTSTORE_URL.
  const restartable = backend.status !== 'ready' || backend.restart !== undefined;
  describe.skipIf(!restartable)('EventStoreDB adapter across a server restart (container only)', () => {
    const opened: EventStore[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });

    it('resumes both subscriptions after the restart: nothing lost, nothing skipped', async () => {
      const restart = backend.status === 'ready' ? backend.restart! : () => Promise.resolve();
      const store = openEventStoreDb({ connectionString: url });
      opened.push(store);
      const prefix = `restart-${randomUUID()}-`;
      const stream = `${prefix}stream`;
      const groupName = `restart-${randomUUID()}`;
      // The port: a new group starts at the end of the log. So the group is made first (as the
      // first webhook makes it) and `before` is written after it: the group must hand it out.
      await store.ensurePersistentGroup(groupName, { filter: { streamPrefixes: [prefix] } });
      const before = newEvent();
      await store.append(stream, [before], { expectedRevision: 'no_stream' });

      const catchUp = store.subscribeToAll({ from: 'start', filter: { streamPrefixes: [prefix] } });
      const live = catchUp[Symbol.asyncIterator]();
      expect((await nextWithin(live, WAIT_MS)).id).toBe(before.id);
      // The consumer joins after the write: it finds the group and must not move its start (nor
      // update it: same settings), so the event written between the group's creation and the
      // join is delivered.
      const group = store.persistentSubscription(groupName, { filter: { streamPrefixes: [prefix] } });
      const consumer = group[Symbol.asyncIterator]();
      const first = await nextWithin(consumer, WAIT_MS);
      expect(first.event.id).toBe(before.id);
      await first.ack();

      // Both iterators are waiting when the server goes away.
      const nextLive: Promise<RecordedEvent> = nextWithin(live, 120_000);
      const persistentAfter: string[] = [];
      const nextGroup = (async () => {
        for (;;) {
          const delivery: PersistentEvent = await nextWithin(consumer, 120_000);
          persistentAfter.push(delivery.event.id);
          await delivery.ack();
          if (delivery.event.id !== before.id) return;
        }
      })();
      await restart();

      const after = newEvent();
      // Retried while the server comes back; the same event id keeps a repeated append idempotent.
      const deadline = Date.now() + 60_000;
      for (;;) {
        try {
          await store.append(stream, [after], { expectedRevision: 0 });
          break;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }

      // The catch-up subscription resubscribed from the last event it handed out: the next event
      // is the new one, not a repeat of `before`.
      expect((await nextLive).id).toBe(after.id);
      // The group rejoined: the new event arrives; `before` may come again (at least once, if its
      // ack was not checkpointed before the restart), nothing else does.
      await nextGroup;
      expect(persistentAfter.at(-1)).toBe(after.id);
      expect(persistentAfter.every((id) => id === before.id || id === after.id)).toBe(true);

      await catchUp.close();
      await group.close();
    }, 240_000);
  });

  // Issue 39 item 2 on a real server: test/commands/numberAudit.test.ts runs the same on the
  // embedded log with EventStoreDB's rules.
  describe('auto numbers on EventStoreDB', () => {
    const opened: EventStore[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });
    const clients = defaultObject('clients')!;
    const numbered = { object: clients, field: 'clientNumber', prefix: 'CL-' };
    const metadata = newEvent().metadata;

    it('a writer that dies after reserving numbers leaves them unused, and the audit records each once with its reason', async () => {
      const store = openEventStoreDb({ connectionString: url });
      opened.push(store);
      const workspaceId = randomUUID();
      const dying = eventStoreDbRules(store);
      const first = new AutoNumbers(dying.events, { audit: false });
      await first.reserveAndAppend(workspaceId, numbered, 1, metadata, numberedRecord(randomUUID(), metadata));
      dying.crashAfter(1);
      for (let i = 0; i < 2; i++) void first.reserveAndAppend(workspaceId, numbered, 1, metadata, numberedRecord(randomUUID(), metadata));
      const counter = `autonumber-${workspaceId}-clients`;
      for (const deadline = Date.now() + WAIT_MS; (await store.readStream(counter)).length < 2; ) {
        if (Date.now() > deadline) throw new Error('the second reservation was not written');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const later = () => new Date(Date.now() + 31_000);
      const restarted = new AutoNumbers(store, { now: later });
      expect(store.atomicGroups).toBe(false);
      const recordId = randomUUID();
      await restarted.reserveAndAppend(workspaceId, numbered, 1, metadata, numberedRecord(recordId, metadata));
      expect((await store.readStream(`record-${recordId}`))[0]!.data).toEqual({ fields: { clientNumber: 'CL-00004' } });
      await restarted.audit(workspaceId, numbered);
      await new AutoNumbers(store, { now: later }).audit(workspaceId, numbered);
      const skipped = await listSkippedNumbers(store, workspaceId, ['clients']);
      expect(skipped.map(({ value, reason }) => ({ value, reason }))).toEqual([
        { value: 'CL-00002', reason: 'unclaimed' },
        { value: 'CL-00003', reason: 'unclaimed' },
      ]);
    }, 60_000);
  });
});

import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Conflict, InsufficientStorage } from '../../src/core/errors.js';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.js';
import { revisionsStatement } from '../../src/eventstore/postgres/appender.js';
import { readAfterStatement } from '../../src/eventstore/postgres/catchUp.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres/index.js';
import { EVENTS_MIGRATION } from '../../src/eventstore/postgres/schema.js';
import { migrate } from '../../src/postgres/migrate.js';
import { openPool, type Pool } from '../../src/postgres/pool.js';
import { eventually } from '../support/until.js';
import { describeBackend } from './backends.js';
import { eventStoreContract, newEvent, nextWithin } from './eventstore.contract.js';
import { postgresBackend, postgresDatabases } from './postgres.js';
import { flatten, recordStatements, type PlanNode, expectGenericPlan } from './postgresStatements.js';

/**
 * The EventStore contract against a real PostgreSQL (the local server or DATABASE_URL; one line
 * and skipped without one), plus what is particular to it: a follower never passes a position a
 * slower transaction fills later, the stores of two processes see each other, and a full disk is
 * InsufficientStorage.
 */

const backend = await postgresBackend();

/** Each store with a pool of its own, as each process has; closing the store ends its pool. */
function opening(url: () => Promise<string>) {
  const pools: Pool[] = [];
  return {
    async open(options: { claimTimeoutMs?: number } = {}): Promise<EventStore> {
      const pool = openPool({ url: await url(), max: 4 });
      pools.push(pool);
      const store = await openPostgresEventStore({ pool, ...options });
      const close = store.close.bind(store);
      return Object.assign(store, {
        close: async () => {
          await close();
          await pool.end().catch(() => undefined); // ended already by a test that let its process 'die'
        },
      });
    },
    pool: () => pools.at(-1)!,
  };
}

describeBackend('PostgreSQL event store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);
  let shared: Promise<string> | undefined;
  const sharedUrl = () => (shared ??= database());
  const stores = opening(sharedUrl);

  eventStoreContract('postgres', () => stores.open(), { waitMs: 10_000, clockSkewMs: 5_000, rewritesUnchained: true });

  describe('particular to PostgreSQL', () => {
    const opened: EventStore[] = [];
    const open = async (url: () => Promise<string>, options: { claimTimeoutMs?: number } = {}) => {
      const { store } = await openWithPool(url, options);
      return store;
    };
    const openWithPool = async (url: () => Promise<string>, options: { claimTimeoutMs?: number } = {}) => {
      const opener = opening(url);
      const store = await opener.open(options);
      opened.push(store);
      return { store, pool: opener.pool() };
    };
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });

    it('never lets a follower pass a position that a slower transaction fills later', async () => {
      const url = await database();
      const slow = await open(() => Promise.resolve(url));
      const fast = await open(() => Promise.resolve(url));
      const reader = await open(() => Promise.resolve(url));
      // A trigger holds the transaction of an append to a 'slow-' stream open for a moment after it
      // wrote its row: a transaction that took its position first and commits last, as under load.
      const admin = openPool({ url, max: 1 });
      try {
        await admin.query(`CREATE FUNCTION csr_test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.stream LIKE 'slow-%' THEN PERFORM pg_sleep(1.5); END IF; RETURN NEW; END $$`);
        await admin.query('CREATE TRIGGER csr_test_slow AFTER INSERT ON csr_events FOR EACH ROW EXECUTE FUNCTION csr_test_slow()');
      } finally {
        await admin.end();
      }
      const subscription = reader.subscribeToAll({ from: 'start' });
      const iterator = subscription[Symbol.asyncIterator]();

      const order: string[] = [];
      const slowAppend = slow.append('slow-1', [newEvent()], { expectedRevision: 'no_stream' }).then((r) => (order.push('slow'), r));
      await new Promise((resolve) => setTimeout(resolve, 300)); // the slow transaction has begun
      const fastAppend = fast.append('fast-1', [newEvent()], { expectedRevision: 'no_stream' }).then((r) => (order.push('fast'), r));

      // Meanwhile a reader polling the log never sees the fast event without the slow one before it.
      const seen: string[][] = [];
      let done = false;
      const polling = (async () => {
        while (!done) {
          seen.push((await reader.readAll({ from: 'start', maxCount: 10 })).map((e) => e.stream));
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const [slowResult, fastResult] = await Promise.all([slowAppend, fastAppend]);
      done = true;
      await polling;

      expect(order).toEqual(['slow', 'fast']);
      expect(slowResult.position < fastResult.position).toBe(true);
      for (const streams of seen) expect(['[]', '["slow-1"]', '["slow-1","fast-1"]']).toContain(JSON.stringify(streams));
      expect(seen.some((streams) => streams.length === 0)).toBe(true); // the reader looked while both were in flight
      const received: RecordedEvent[] = [await nextWithin(iterator, 10_000), await nextWithin(iterator, 10_000)];
      expect(received.map((e) => e.stream)).toEqual(['slow-1', 'fast-1']);
      await subscription.close();
    });

    it('wakes a live subscriber of one process on an append made by another', async () => {
      const url = await database();
      const server = await open(() => Promise.resolve(url));
      const cli = await open(() => Promise.resolve(url));
      const subscription = server.subscribeToAll({ from: 'start' });
      const iterator = subscription[Symbol.asyncIterator]();
      const pending = nextWithin(iterator, 10_000);
      await new Promise((resolve) => setTimeout(resolve, 300)); // live before the append
      const event = newEvent();
      const started = Date.now();
      await cli.append('record-1', [event], { expectedRevision: 'no_stream' });
      expect((await pending).id).toBe(event.id);
      // Woken by NOTIFY, well before the slow poll would have looked.
      expect(Date.now() - started).toBeLessThan(1_500);
      await subscription.close();
    });

    it("followers of one process at one cursor share a read; a filtered follower passes over another process's appends it wants nothing of, and reads those it wants", async () => {
      const url = await database();
      const { store: server, pool } = await openWithPool(() => Promise.resolve(url));
      const cli = await open(() => Promise.resolve(url));
      const statements = recordStatements(pool);
      const reads = () => statements.filter((text) => text.startsWith('SELECT h.seq AS head'));
      const records = [1, 2].map(() => server.subscribeToAll({ from: 'start', filter: { streamPrefixes: ['record-'] } })[Symbol.asyncIterator]());
      const workspaces = server.subscribeToAll({ from: 'start', filter: { streamPrefixes: ['workspace-'] } })[Symbol.asyncIterator]();
      const nextWorkspace = nextWithin(workspaces, 10_000);
      const first = records.map((iterator) => nextWithin(iterator, 10_000));
      // All three live and caught up: no read for a while (the listener connected, and they looked once more).
      for (let seen = -1; seen !== reads().length; ) {
        seen = reads().length;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const before = reads().length;
      const event = newEvent();
      await cli.append('record-1', [event], { expectedRevision: 'no_stream' });
      expect((await Promise.all(first)).map((e) => e.id)).toEqual([event.id, event.id]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      // One read for both record followers; none for the workspace follower.
      expect(reads().length - before).toBe(1);
      const schema = newEvent();
      await cli.append('workspace-1', [schema], { expectedRevision: 'no_stream' });
      expect((await nextWorkspace).id).toBe(schema.id);
    });

    it('competing consumers in two processes: an event whose consumer died is handed out again after the claim timeout', async () => {
      const url = await database();
      const group = 'dispatch';
      const { store: first, pool: firstPool } = await openWithPool(() => Promise.resolve(url), { claimTimeoutMs: 1_000 });
      const second = await open(() => Promise.resolve(url), { claimTimeoutMs: 1_000 });
      await first.ensurePersistentGroup(group);
      const event = newEvent();
      await first.append('record-1', [event], { expectedRevision: 'no_stream' });
      // The first consumer takes the event and dies without a word (its claim is never released).
      const dying = first.persistentSubscription(group, { bufferSize: 1 })[Symbol.asyncIterator]();
      expect((await nextWithin(dying, 10_000)).event.id).toBe(event.id);
      await firstPool.end(); // its process is gone: no ack, no release, no renewal of the claim
      const survivor = second.persistentSubscription(group)[Symbol.asyncIterator]();
      const again = await nextWithin(survivor, 10_000);
      expect(again.event.id).toBe(event.id);
      await again.ack();
    });

    it("a follower's read is planned as the cheap read it is on a log never analyzed (below jit_above_cost: no JIT compilation per read)", async () => {
      const url = await database();
      const { store, pool } = await openWithPool(() => Promise.resolve(url));
      for (let i = 0; i < 20; i++) await store.append(`record-${i}`, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      const { sql, values } = readAfterStatement('10', { streamPrefixes: ['record-'] }, 500);
      const explained = await pool.query<{ 'QUERY PLAN': [{ Plan: { 'Total Cost': number } }] }>(`EXPLAIN (FORMAT JSON) ${sql}`, values);
      const jitAbove = Number((await pool.query<{ jit_above_cost: string }>('SHOW jit_above_cost')).rows[0]!.jit_above_cost);
      expect(explained.rows[0]!['QUERY PLAN'][0].Plan['Total Cost']).toBeLessThan(Math.min(jitAbove, 10_000));
    });

    it("an append reads each stream's last revision from the index's last entry, however long the stream (not all its revisions)", async () => {
      const url = await database();
      const { store, pool } = await openWithPool(() => Promise.resolve(url));
      // A long stream, as a counter written at every create becomes, beside a short one.
      for (let batch = 0; batch < 20; batch++) await store.append('counter-1', Array.from({ length: 50 }, () => newEvent()), { expectedRevision: 'any' });
      await store.append('record-1', [newEvent()], { expectedRevision: 'no_stream' });
      await pool.query('ANALYZE csr_events');
      const explained = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${revisionsStatement(['counter-1', 'record-1', 'none-1'])}`);
      const events = flatten(explained.rows[0]!['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === 'csr_events');
      expect(events.length).toBeGreaterThan(0);
      // At most one index entry per stream asked.
      expect(events.reduce((sum, node) => sum + node['Actual Rows'] * node['Actual Loops'], 0)).toBeLessThanOrEqual(3);
      // And the answer: the last revisions, nothing for a stream without events.
      const found = await pool.query<{ stream: string; revision: number | null }>(revisionsStatement(['counter-1', 'record-1', 'none-1']));
      expect(Object.fromEntries(found.rows.map((row) => [row.stream, row.revision]))).toEqual({ 'counter-1': 999, 'record-1': 0, 'none-1': null });
      expect((await pool.query(revisionsStatement([]))).rows).toEqual([]);
    });

    it('reads of streams asked while others are on their way go together in one statement, each with its own events in order', async () => {
      const url = await database();
      const { store, pool } = await openWithPool(() => Promise.resolve(url));
      for (let i = 0; i < 6; i++) await store.append(`record-${i}`, Array.from({ length: i + 1 }, () => newEvent()), { expectedRevision: 'no_stream' });
      const asked: Array<[string, Parameters<EventStore['readStream']>[1]]> = [];
      for (let i = 0; i < 6; i++) {
        asked.push([`record-${i}`, {}], [`record-${i}`, { direction: 'backwards', maxCount: 1 }], [`record-${i}`, { fromRevision: 1, maxCount: 2 }]);
        asked.push([`record-${i}`, { direction: 'backwards', fromRevision: 2 }]);
      }
      asked.push(['record-none', {}], ['record-none', { direction: 'backwards', maxCount: 1 }]);
      const alone = [];
      for (const [stream, options] of asked) alone.push(await store.readStream(stream, options));
      const statements = recordStatements(pool);
      const together = await Promise.all(asked.map(([stream, options]) => store.readStream(stream, options)));
      const revisions = (events: RecordedEvent[][]) => events.map((list) => list.map((event) => `${event.stream}@${event.revision}`));
      expect(revisions(together)).toEqual(revisions(alone));
      expect(together.map((list) => list.map((event) => event.id))).toEqual(alone.map((list) => list.map((event) => event.id)));
      expect(revisions(together).slice(20, 24)).toEqual([['record-5@0', 'record-5@1', 'record-5@2', 'record-5@3', 'record-5@4', 'record-5@5'], ['record-5@5'], ['record-5@1', 'record-5@2'], ['record-5@2', 'record-5@1', 'record-5@0']]);
      // Two directions, each: the first reads go at once (two at a time), the rest together.
      expect(statements.length).toBeGreaterThan(1);
      expect(statements.length).toBeLessThanOrEqual(6);
      // Each statement's plan is made once per connection (a generic plan) and reads the index range.
      const client = await pool.connect();
      try {
        for (const [index, sql] of [...new Set(statements)].entries()) {
          const nodes = await expectGenericPlan(client, `reads_${index}`, sql, (n) => Array.from({ length: n }, (_, i) => ({ n: i, s: `record-${i % 6}`, f: 3, m: 2 })));
          const events = nodes.filter((node) => node['Relation Name'] === 'csr_events');
          expect(events.map((node) => node['Node Type'])).toEqual(['Index Scan']);
        }
      } finally {
        client.release();
      }
    });

    it('the acks of a batch given at once are one statement (not a commit per event), and each resolves once its event is done', async () => {
      const url = await database();
      const group = 'batched';
      const { store, pool } = await openWithPool(() => Promise.resolve(url));
      await store.ensurePersistentGroup(group);
      for (let i = 0; i < 5; i++) await store.append(`record-${i}`, [newEvent()], { expectedRevision: 'no_stream' });
      const consumer = store.persistentSubscription(group)[Symbol.asyncIterator]();
      const batch = [];
      for (let i = 0; i < 5; i++) batch.push(await nextWithin(consumer, 10_000));
      const statements = recordStatements(pool);
      await Promise.all(batch.map((item) => item.ack()));
      expect(statements.filter((sql) => sql.startsWith('DELETE FROM csr_group_events'))).toHaveLength(1);
      expect((await pool.query('SELECT count(*)::int AS left FROM csr_group_events WHERE grp = $1', [group])).rows).toEqual([{ left: 0 }]);
      expect(await store.groupCheckpoint(group)).toEqual({ position: batch.at(-1)!.event.position });
    });

    it("a group consumer's claim is a named statement, planned once per connection and then run on its generic plan", async () => {
      const url = await database();
      const group = 'planned';
      const { store, pool } = await openWithPool(() => Promise.resolve(url));
      await store.ensurePersistentGroup(group);
      const consumer = store.persistentSubscription(group)[Symbol.asyncIterator]();
      // One event at a time: a claim per event, and an empty one after it.
      for (let i = 0; i < 20; i++) {
        await store.append(`record-${i}`, [newEvent()], { expectedRevision: 'no_stream' });
        await (await nextWithin(consumer, 10_000)).ack();
      }
      const clients = await Promise.all(Array.from({ length: 4 }, () => pool.connect()));
      try {
        const claims = [];
        for (const client of clients) {
          const found = await client.query<{ generic: string; custom: string }>(
            "SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE statement LIKE 'WITH due AS (%'",
          );
          claims.push(...found.rows.map((row) => ({ generic: Number(row.generic), custom: Number(row.custom) })));
        }
        expect(claims.length).toBeGreaterThan(0);
        expect(claims.some((claim) => claim.generic > 0 && claim.custom <= 5)).toBe(true);
      } finally {
        for (const client of clients) client.release();
      }
    });

    it("a group's consumers vacuum the rows they deleted, so claims do not scan a growing heap of done events where autovacuum is off", async () => {
      const url = await database();
      const group = 'settled';
      const { store, pool } = await openWithPool(() => Promise.resolve(url));
      await pool.query('ALTER TABLE csr_group_events SET (autovacuum_enabled = false)');
      await store.ensurePersistentGroup(group);
      for (let batch = 0; batch < 25; batch++) {
        await Promise.all(Array.from({ length: 100 }, (_, i) => store.append(`record-${batch}-${i}`, [newEvent()], { expectedRevision: 'no_stream' })));
      }
      const consumer = store.persistentSubscription(group)[Symbol.asyncIterator]();
      for (let i = 0; i < 2_500; i++) await (await nextWithin(consumer, 10_000)).ack();
      const vacuumed = () => pool.query<{ vacuums: string }>("SELECT vacuum_count AS vacuums FROM pg_stat_user_tables WHERE relname = 'csr_group_events'");
      await eventually(vacuumed, (found) => Number(found.rows[0]?.vacuums) >= 1, 10_000, 'csr_group_events vacuumed');
    });

    it('writes a group and its claim all or none, a claim and its dependents too, and answers a full disk with InsufficientStorage, writing nothing', async () => {
      const url = await database();
      const store = await open(() => Promise.resolve(url));
      expect(store.atomicGroups).toBe(true);
      // The server commits: an upsert hands it slices of 100 (commands/upsert.ts).
      expect(store.commitsOnOwnThread).toBe(false);
      const admin = openPool({ url, max: 1 });
      try {
        await admin.query(`CREATE FUNCTION csr_test_full() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.stream LIKE 'full-%' THEN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END IF; RETURN NEW; END $$`);
        await admin.query('CREATE TRIGGER csr_test_full BEFORE INSERT ON csr_events FOR EACH ROW EXECUTE FUNCTION csr_test_full()');
      } finally {
        await admin.end();
      }
      await expect(store.append('full-1', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(InsufficientStorage);
      await expect(
        store.appendThen([{ stream: 'claim-1', events: [newEvent()], expectedRevision: 'no_stream' }, { stream: 'full-2', events: [newEvent()], expectedRevision: 'no_stream' }], []),
      ).rejects.toBeInstanceOf(InsufficientStorage);
      // A claim and what depends on it (an auto number's reservation and its record) share the
      // transaction: the record not written, its number is not taken either (issue 39 item 2).
      await expect(
        store.appendThen({ stream: 'claim-2', events: [newEvent()], expectedRevision: 'no_stream' }, [{ stream: 'full-3', events: [newEvent()], expectedRevision: 'no_stream' }]),
      ).rejects.toBeInstanceOf(InsufficientStorage);
      expect(await store.readStream('claim-2')).toEqual([]);
      expect(await store.readAll({ from: 'start', maxCount: 10 })).toEqual([]);
      expect(await store.headPosition()).toBeNull();
      // The same write succeeds once there is room again; positions go on without a gap.
      await store.append('ok-1', [newEvent()], { expectedRevision: 'no_stream' });
      await expect(store.append('ok-1', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(Conflict);
      expect((await store.readAll({ from: 'start', maxCount: 10 })).map((e) => e.position)).toEqual([(await store.headPosition())!]);
    });

    describe('claim streams (reservations, counters) in a table beside the log', () => {
      const metadata = { source: 'api', actor: { type: 'system', id: 't', name: 't' }, actionId: 'a', correlationId: 'c', causationId: 'c' } as const;
      const event = (type: string) => ({ ...newEvent(type, { n: 1 }), metadata });
      const expectConflict = (appending: Promise<unknown>) => expect(appending).rejects.toBeInstanceOf(Conflict);

      it('are not in the log, its chain or its subscriptions, and commit with the record', async () => {
        const store = await open(database);
        await store.appendThen([{ stream: 'reservation-w-clients-abc', events: [event('ValueReserved')], expectedRevision: 'no_stream' }, { stream: 'record-r1', events: [event('RecordCreated')], expectedRevision: 'no_stream' }], []);
        const counter = await store.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 'no_stream' });
        expect((await store.readAll({ from: 'start', maxCount: 10 })).map((e) => e.stream)).toEqual(['record-r1']);
        // A claim has no place in the log: an append of claims alone reports the log's head.
        expect(counter.position).toBe(await store.headPosition());
        expect(await store.checkChain({ until: await store.headPosition() })).toMatchObject({ events: 1, chained: 1, firstBreak: null });
        const [claim] = await store.readStream('reservation-w-clients-abc');
        expect(claim).toMatchObject({ type: 'ValueReserved', revision: 0, data: { n: 1 }, metadata: { actionId: 'a' } });
        expect(claim!.created.getTime()).toBe((await store.readStream('record-r1'))[0]!.created.getTime());
      });

      it('of a log written before are taken over by the upgrade, and go on at their revision', async () => {
        const url = await database();
        const admin = openPool({ url, max: 1 });
        try {
          // The schema before claims had a table of their own, and its claims in the log.
          await migrate(admin, { component: EVENTS_MIGRATION.component, steps: EVENTS_MIGRATION.steps.slice(0, 1) });
          await admin.query(`INSERT INTO csr_events (seq, id, stream, revision, type, created_ms, data, metadata) VALUES
            (1, 'e1', 'reservation-w-clients-old', 0, 'ValueReserved', 1, '{}', '{}'),
            (2, 'e2', 'reservation-w-clients-old', 1, 'ValueReleased', 1, '{}', '{}'),
            (3, 'e3', 'autonumber-w-clients', 0, 'NumbersReserved', 1, '{}', '{}');
            UPDATE csr_event_head SET seq = 3`);
        } finally {
          await admin.end();
        }
        const store = await open(() => Promise.resolve(url));
        expect((await store.readStream('reservation-w-clients-old')).map((e) => [e.type, e.revision])).toEqual([['ValueReserved', 0], ['ValueReleased', 1]]);
        await expectConflict(store.append('reservation-w-clients-old', [event('ValueReserved')], { expectedRevision: 0 }));
        await expectConflict(store.append('autonumber-w-clients', [event('NumbersReserved')], { expectedRevision: 'no_stream' }));
        await store.append('reservation-w-clients-old', [event('ValueReserved')], { expectedRevision: 1 });
        const [last] = await store.readStream('reservation-w-clients-old', { direction: 'backwards', maxCount: 1 });
        expect([last!.type, last!.revision]).toEqual(['ValueReserved', 2]);
      });

      it('appended to the log by a process of the previous version are kept too: no value is handed out twice while both versions run', async () => {
        const url = await database();
        const store = await open(() => Promise.resolve(url));
        await store.append('reservation-w-clients-new', [event('ValueReserved')], { expectedRevision: 'no_stream' });
        const admin = openPool({ url, max: 1 });
        // What the previous version's appender writes: the claim as a row of the log.
        const previousVersionClaims = (stream: string, seq: number) =>
          admin.query(`INSERT INTO csr_events (seq, id, stream, revision, type, created_ms, data, metadata) VALUES ($1, $2, $3, 0, 'ValueReserved', 1, '{}', '{}')`, [seq, randomUUID(), stream]);
        try {
          await previousVersionClaims('reservation-w-clients-old', 1_000_001);
          // Its claim binds this version,
          await expectConflict(store.append('reservation-w-clients-old', [event('ValueReserved')], { expectedRevision: 'no_stream' }));
          // and this version's claim binds it: its append fails and writes nothing.
          await expect(previousVersionClaims('reservation-w-clients-new', 1_000_002)).rejects.toThrow(/duplicate key/);
          expect((await admin.query('SELECT count(*)::integer AS n FROM csr_events WHERE seq = 1000002')).rows[0]).toEqual({ n: 0 });
        } finally {
          await admin.end();
        }
      });
    });

  });
});


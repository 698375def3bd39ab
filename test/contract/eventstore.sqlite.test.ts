import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Conflict } from '../../src/core/errors.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { Sqlite } from '../../src/sqlite/driver.js';
import { fileThreadFits } from '../../src/sqlite/fileThread.js';
import { repoRoot } from '../support/process.js';
import { eventStoreContract, newEvent, nextWithin, take, takeAcking } from './eventstore.contract.js';

const root = mkdtempSync(join(tmpdir(), 'csr-eventstore-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fresh file in a directory that does not exist yet (the adapter creates it). */
const freshPath = () => join(root, randomUUID(), 'events.sqlite');

// waitMs is only a deadline for what must arrive: generous, for a busy machine.
eventStoreContract('sqlite', () => openSqliteEventStore({ path: freshPath() }), { waitMs: 10_000, clockSkewMs: 1_000, rewritesUnchained: true });

/** The commit thread's script as built (test/globalSetup.ts builds dist/): the sources vitest runs have none. */
const BUILT_COMMIT_THREAD = pathToFileURL(join(repoRoot, 'dist', 'src', 'eventstore', 'sqlite', 'commitThread.js'));

// The API process's store: its appends commit on a thread of their own (threadedCommitter.ts).
eventStoreContract('sqlite, committing on a thread', () => openSqliteEventStore({ path: freshPath(), commitThread: BUILT_COMMIT_THREAD }), {
  waitMs: 10_000,
  clockSkewMs: 1_000,
  rewritesUnchained: true,
});

/** How long a test here waits for an event that must arrive (a deadline; a healthy run takes milliseconds). */
const ARRIVES_MS = 10_000;

const QUICK = { initialMs: 10, maxMs: 50 };

/**
 * Another connection takes the file's write lock in a thread of its own and keeps it for `ms`,
 * as another process would: this thread may then wait in SQLite's busy handler. Resolves once
 * the lock is taken, to `released`, which settles when the thread has committed and exited.
 */
async function holdWriteLock(path: string, ms: number): Promise<{ released: Promise<unknown> }> {
  const holder = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     import(workerData.driver).then(({ Sqlite }) => {
       const other = new Sqlite(workerData.path);
       other.exec('BEGIN IMMEDIATE');
       parentPort.postMessage('locked');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
       other.exec('COMMIT');
       other.close();
     });`,
    // The project's own driver module (built by the suite's setup): it picks the driver this Node.js loads.
    { eval: true, workerData: { path, ms, driver: pathToFileURL(join(repoRoot, 'dist', 'src', 'sqlite', 'driver.js')).href } },
  );
  // Listened to from the start: the exit may come while the caller waits on something else.
  const released = once(holder, 'exit');
  await once(holder, 'message');
  return { released };
}

describe('SQLite event store', () => {
  const opened: EventStore[] = [];
  const open = (path: string) => {
    const store = openSqliteEventStore({ path });
    opened.push(store);
    return store;
  };

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it('writes groups all or none (one transaction), as atomicGroups says', () => {
    expect(open(freshPath()).atomicGroups).toBe(true);
  });

  it('says it commits on a thread of its own only when it was opened with a commit thread (an API process)', async () => {
    expect(open(freshPath()).commitsOnOwnThread).toBe(false);
    const threaded = openSqliteEventStore({ path: freshPath(), commitThread: BUILT_COMMIT_THREAD });
    opened.push(threaded);
    expect(threaded.commitsOnOwnThread).toBe(true);
    await expect(threaded.append('threaded', [newEvent()], { expectedRevision: 'no_stream' })).resolves.toMatchObject({ nextRevision: 0 });
  });

  it('stores each event with its own metadata when appends share one metadata object', async () => {
    const store = open(freshPath());
    const shared = newEvent().metadata;
    await Promise.all([
      store.append('shared-1', [{ ...newEvent(), metadata: shared }], { expectedRevision: 'no_stream' }),
      store.appendThen({ stream: 'shared-2', events: [{ ...newEvent(), metadata: shared }], expectedRevision: 'no_stream' }, [
        { stream: 'shared-3', events: [{ ...newEvent(), metadata: shared }, newEvent()], expectedRevision: 'no_stream' },
      ]),
    ]);
    await store.append('shared-1', [{ ...newEvent(), metadata: shared }], { expectedRevision: 0 });
    const log = await store.readAll({ from: 'start', maxCount: 10 });
    expect(log).toHaveLength(5);
    const hashes = new Set(log.map((event) => event.metadata.hash));
    expect(hashes.size).toBe(5);
    for (const event of log.filter((e) => e.metadata.actionId === shared.actionId)) {
      const { hash: _hash, ...rest } = event.metadata as typeof event.metadata & { hash?: string };
      expect(rest).toEqual(shared);
    }
    expect(log.filter((e) => e.metadata.actionId === shared.actionId)).toHaveLength(4);
  });

  it('shows a live subscriber appends made through another instance on the same file', async () => {
    const path = freshPath();
    const server = open(path);
    const cli = open(path); // stands in for the `csr` process
    const iterator = server.subscribeToAll({ from: 'start' })[Symbol.asyncIterator]();
    const pending = nextWithin(iterator, ARRIVES_MS);
    await new Promise((resolve) => setTimeout(resolve, 50)); // let the subscriber go live first

    const event = newEvent();
    await cli.append('record-1', [event], { expectedRevision: 'no_stream' });
    expect((await pending).id).toBe(event.id);
  });

  it('commits concurrent appends together, in call order, with one commit time', async () => {
    const store = open(freshPath());
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => store.append(`stream-${i}`, [newEvent()], { expectedRevision: 'no_stream' })),
    );

    const positions = results.map((r) => r.position);
    for (let i = 1; i < positions.length; i++) expect(positions[i - 1]! < positions[i]!).toBe(true);
    const created = await Promise.all(results.map((_, i) => store.readStream(`stream-${i}`)));
    expect(new Set(created.map(([e]) => e!.created.getTime())).size).toBe(1);
  });

  it("waits for another process's write lock without holding up the event loop, then commits", async () => {
    const path = freshPath();
    const store = open(path);
    await store.append('warm-up', [newEvent()], { expectedRevision: 'no_stream' }); // the file and its tables exist
    const otherProcess = new Sqlite(path);
    otherProcess.exec('BEGIN IMMEDIATE');
    let settled = false;
    const appended = store.append('record-1', [newEvent()], { expectedRevision: 'no_stream' });
    void appended.then(
      () => (settled = true),
      () => (settled = true),
    );
    // Timers still fire while the append waits: SQLite's busy wait would have stopped them.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    otherProcess.exec('COMMIT');
    otherProcess.close();
    expect((await appended).nextRevision).toBe(0);
    expect(await store.readStream('record-1')).toHaveLength(1);
  });

  it('joins a persistent group while another process holds the write lock: it waits (busy_timeout), after appends too', async () => {
    const path = freshPath();
    const store = open(path);
    // The appends make the committer, which tries the lock without waiting around its own BEGIN:
    // the rest of the connection must still wait for it as the store's file promises.
    await store.append('warm-up', [newEvent()], { expectedRevision: 'no_stream' });
    await store.ensurePersistentGroup('earlier'); // the group tables exist: joining only writes a row
    const lock = await holdWriteLock(path, 300);
    const joined = store.persistentSubscription('waits-for-the-lock');
    await lock.released;
    await store.append('after', [newEvent()], { expectedRevision: 'no_stream' });
    const [event] = await take(joined, 1, ARRIVES_MS); // a new group starts at the head
    expect(event!.event.stream).toBe('after');
    await joined.close();
  });

  it('waits for a write lock still held when the store closes, and commits what was waiting for it', async () => {
    const path = freshPath();
    const store = openSqliteEventStore({ path });
    await store.append('warm-up', [newEvent()], { expectedRevision: 'no_stream' });
    const lock = await holdWriteLock(path, 300);
    const appended = store.append('record-1', [newEvent()], { expectedRevision: 'no_stream' });
    await new Promise((resolve) => setTimeout(resolve, 20)); // it has found the lock taken, and waits
    await store.close(); // the last chance: it waits for the lock (busy_timeout)
    await lock.released;

    expect((await appended).nextRevision).toBe(0);
    const reopened = open(path);
    expect(await reopened.readStream('record-1')).toHaveLength(1);
  });

  it('commits an append still waiting for the write lock when the store closes', async () => {
    const path = freshPath();
    const store = openSqliteEventStore({ path });
    await store.append('warm-up', [newEvent()], { expectedRevision: 'no_stream' });
    const otherProcess = new Sqlite(path);
    otherProcess.exec('BEGIN IMMEDIATE');
    const appended = store.append('record-1', [newEvent()], { expectedRevision: 'no_stream' });
    await new Promise((resolve) => setTimeout(resolve, 20)); // it has found the lock taken, and waits
    otherProcess.exec('COMMIT');
    await store.close(); // before its next try

    expect((await appended).nextRevision).toBe(0);
    const reopened = open(path);
    expect(await reopened.readStream('record-1')).toHaveLength(1);
    otherProcess.close();
  });

  describe('committing on a thread of its own (the API process)', () => {
    const openThreaded = (path: string) => {
      const store = openSqliteEventStore({ path, commitThread: BUILT_COMMIT_THREAD });
      opened.push(store);
      return store;
    };

    it('commits while the event loop that asked is busy: the commit and its fsync hold the thread, not the caller', async () => {
      // The contract run above uses the thread only where it fits; on this machine it must.
      expect(fileThreadFits(BUILT_COMMIT_THREAD, freshPath())).toBe(true);
      const path = freshPath();
      const store = openThreaded(path);
      await store.append('warm-up', [newEvent()], { expectedRevision: 'no_stream' });
      const appended = store.append('record-1', [newEvent()], { expectedRevision: 'no_stream' });
      await new Promise((resolve) => setImmediate(resolve)); // the turn's appends went to the thread
      const reader = new Sqlite(path);
      const count = reader.prepare("SELECT count(*) AS n FROM events WHERE stream = 'record-1'").pluck();
      const deadline = Date.now() + ARRIVES_MS;
      // Not one turn of this event loop until the row is there: a commit on this thread could not write it.
      let committed = false;
      while (!committed && Date.now() < deadline) committed = count.get() === 1;
      reader.close();
      expect(committed).toBe(true);
      expect((await appended).nextRevision).toBe(0);
    });

    it('gives a conflicting append the same Conflict as a commit on the calling thread, and the others of its commit their results', async () => {
      const store = openThreaded(freshPath());
      await store.append('taken', [newEvent()], { expectedRevision: 'no_stream' });
      const [conflicting, fine] = await Promise.allSettled([
        store.append('taken', [newEvent()], { expectedRevision: 'no_stream' }),
        store.append('free', [newEvent()], { expectedRevision: 'no_stream' }),
      ]);
      expect(conflicting.status).toBe('rejected');
      const error = (conflicting as PromiseRejectedResult).reason as Conflict;
      expect(error).toBeInstanceOf(Conflict);
      expect(error).toMatchObject({ status: 409, stream: 'taken', expected: 'no_stream', actual: '0' });
      expect(fine).toMatchObject({ status: 'fulfilled', value: { nextRevision: 0 } });
    });

    it('commits the appends still queued when the store closes, then ends its thread', async () => {
      const path = freshPath();
      const store = openSqliteEventStore({ path, commitThread: BUILT_COMMIT_THREAD });
      const appended = Array.from({ length: 50 }, (_, i) => store.append(`closing-${i}`, [newEvent()], { expectedRevision: 'no_stream' }));
      await store.close();
      expect((await Promise.all(appended)).map((result) => result.nextRevision)).toEqual(appended.map(() => 0));
      const reopened = open(path);
      expect(await reopened.readStream('closing-49')).toHaveLength(1);
      await expect(store.append('after', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow('closed');
    });
  });

  it('fails a conflicting append of a batch alone, taking earlier appends of the batch into account', async () => {
    const store = open(freshPath());
    const duplicate = newEvent();
    await store.append('existing', [duplicate], { expectedRevision: 'no_stream' });

    const [created, conflicting, other, following, duplicated] = await Promise.allSettled([
      store.append('s', [newEvent()], { expectedRevision: 'no_stream' }),
      store.append('s', [newEvent()], { expectedRevision: 'no_stream' }),
      store.append('t', [newEvent()], { expectedRevision: 'no_stream' }),
      store.append('s', [newEvent()], { expectedRevision: 0 }),
      store.append('u', [newEvent(), duplicate], { expectedRevision: 'no_stream' }),
    ]);

    expect(created).toMatchObject({ status: 'fulfilled', value: { nextRevision: 0 } });
    expect(conflicting.status === 'rejected' && conflicting.reason).toBeInstanceOf(Conflict);
    expect(other).toMatchObject({ status: 'fulfilled', value: { nextRevision: 0 } });
    expect(following).toMatchObject({ status: 'fulfilled', value: { nextRevision: 1 } });
    // An event id is unique in the log; the failed append leaves nothing behind.
    expect(duplicated.status).toBe('rejected');
    expect(await store.readStream('u')).toEqual([]);
    expect((await store.readStream('s')).map((e) => e.revision)).toEqual([0, 1]);
  });

  it('starts a new group at the end of the log, also on a file with history', async () => {
    const store = open(freshPath());
    await store.append('record-1', [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
    const iterator = store.persistentSubscription('g')[Symbol.asyncIterator]();
    const after = newEvent();
    await store.append('record-1', [after], { expectedRevision: 1 });
    expect((await nextWithin(iterator, ARRIVES_MS)).event.id).toBe(after.id);
  });

  it('replays parked events asked for by another process (the csr command) on the same file', async () => {
    const path = freshPath();
    const server = open(path);
    const iterator = server.persistentSubscription('webhooks')[Symbol.asyncIterator]();
    const event = newEvent();
    await server.append('record-1', [event], { expectedRevision: 'no_stream' });
    await (await nextWithin(iterator, ARRIVES_MS)).nack('park', 'receiver rejects it');
    await new Promise((resolve) => setTimeout(resolve, 300)); // the group writes its state in the background
    const operator = open(path);
    expect(await operator.replayParked('webhooks')).toBe(1);
    await operator.close();
    const replayed = await nextWithin(iterator, ARRIVES_MS);
    expect(replayed).toMatchObject({ retryCount: 0, event: { id: event.id } });
    await replayed.ack();
    await server.close();
    const again = open(path);
    expect(await again.replayParked('webhooks')).toBe(0);
    await again.close();
  });

  it('writes a group all or none: a conflicting reservation undoes the ones before it', async () => {
    const store = open(freshPath());
    await store.append('taken', [newEvent()], { expectedRevision: 'no_stream' });
    const claim = store.appendThen(
      [
        { stream: 'free', events: [newEvent()], expectedRevision: 'no_stream' },
        { stream: 'taken', events: [newEvent()], expectedRevision: 'no_stream' },
      ],
      [{ stream: 'record', events: [newEvent()], expectedRevision: 'no_stream' }],
    );
    await expect(claim).rejects.toBeInstanceOf(Conflict);
    expect(await store.readStream('free')).toEqual([]);
    const dependent = await store.appendThen({ stream: 'claim', events: [newEvent()], expectedRevision: 'no_stream' }, [
      [
        { stream: 'free', events: [newEvent()], expectedRevision: 'no_stream' },
        { stream: 'taken', events: [newEvent()], expectedRevision: 'no_stream' },
        { stream: 'record', events: [newEvent()], expectedRevision: 'no_stream' },
      ],
    ]);
    expect(dependent.then[0]!.status).toBe('rejected');
    expect(await store.readStream('free')).toEqual([]);
    expect(await store.readStream('record')).toEqual([]);
    expect(await store.readStream('claim')).toHaveLength(1);
  });

  it('keeps a persistent group checkpoint, retry counts and parked events across a restart', async () => {
    const path = freshPath();
    const first = open(path);
    const events = [newEvent(), newEvent(), newEvent(), newEvent(), newEvent()];
    const iterator = first.persistentSubscription('webhooks', { retryBackoff: QUICK })[Symbol.asyncIterator]();
    await first.append('record-1', events, { expectedRevision: 'no_stream' });
    const delivered = [];
    for (let i = 0; i < 5; i++) delivered.push(await nextWithin(iterator, ARRIVES_MS));
    await delivered[0]!.ack();
    // delivered[1] stays un-acked: the checkpoint cannot pass it.
    await delivered[2]!.nack('park', 'receiver rejects it');
    await delivered[3]!.nack('retry', 'receiver down');
    await delivered[4]!.ack();
    await first.close();

    const second = open(path);
    const again = await takeAcking(second.persistentSubscription('webhooks'), 3, ARRIVES_MS);
    // Acked beyond the checkpoint (events[4]) comes again: at least once, not exactly once.
    expect(again.map((d) => d.event.id)).toEqual([events[1]!.id, events[3]!.id, events[4]!.id]);
    expect(again[1]!.retryCount).toBeGreaterThanOrEqual(1);
    await second.close();

    const db = new Sqlite(path, { readonly: true });
    try {
      const parked = db.prepare('SELECT grp, reason FROM persistent_parked').all();
      expect(parked).toEqual([{ grp: 'webhooks', reason: 'receiver rejects it' }]);
    } finally {
      db.close();
    }
  });

  it('lets later events go ahead while a retried one waits out its backoff, then hands it out first', async () => {
    const store = open(freshPath());
    const events = [newEvent(), newEvent()];
    const iterator = store.persistentSubscription('g', { bufferSize: 1, retryBackoff: { initialMs: 200, maxMs: 200 } })[Symbol.asyncIterator]();
    await store.append('record-1', events, { expectedRevision: 'no_stream' });

    await (await nextWithin(iterator, ARRIVES_MS)).nack('retry', 'later');
    const next = await nextWithin(iterator, ARRIVES_MS);
    expect(next.event.id).toBe(events[1]!.id);
    await next.ack();
    expect(await nextWithin(iterator, ARRIVES_MS)).toMatchObject({ retryCount: 1, event: { id: events[0]!.id } });
  });

  it('ignores an ack for a hand-out that was taken back from a closed consumer', async () => {
    const store = open(freshPath());
    const event = newEvent();
    const first = store.persistentSubscription('g', { retryBackoff: QUICK });
    await store.append('record-1', [event], { expectedRevision: 'no_stream' });
    const stale = await nextWithin(first[Symbol.asyncIterator](), ARRIVES_MS);
    await first.close();
    const second = store.persistentSubscription('g', { retryBackoff: QUICK })[Symbol.asyncIterator]();
    const current = await nextWithin(second, ARRIVES_MS);
    expect(current.retryCount).toBe(1);

    await stale.ack();
    await current.nack('retry', 'receiver down');
    expect(await nextWithin(second, ARRIVES_MS)).toMatchObject({ retryCount: 2, event: { id: event.id } });
  });

  it('holds back a consumer at bufferSize un-acked events', async () => {
    const store = open(freshPath());
    const iterator = store.persistentSubscription('g', { bufferSize: 2 })[Symbol.asyncIterator]();
    await store.append('record-1', [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
    const [a] = [await nextWithin(iterator, ARRIVES_MS), await nextWithin(iterator, ARRIVES_MS)];

    let third = false;
    const pending = iterator.next().then((r) => {
      third = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(third).toBe(false);
    await a!.ack();
    expect((await pending).done).toBe(false);
  });

  it('ends pending subscriptions when the store closes', async () => {
    const store = openSqliteEventStore({ path: freshPath() });
    const live = store.subscribeToAll({ from: 'start' })[Symbol.asyncIterator]();
    const group = store.persistentSubscription('g')[Symbol.asyncIterator]();
    const waiting = [live.next(), group.next()];
    await new Promise((resolve) => setTimeout(resolve, 20));

    await store.close();
    const ended = await Promise.all(waiting);
    expect(ended.map((r) => r.done)).toEqual([true, true]);
  });

  it('checks the chain from the stored text: a row in an older form still verifies, an edited one breaks it', async () => {
    const path = freshPath();
    const store = open(path);
    await store.append('s', [newEvent(), newEvent('Other', { nested: { b: 1, a: 2 } }), newEvent()], { expectedRevision: 'no_stream' });
    await Promise.all(Array.from({ length: 2_100 }, (_, i) => store.append(`t-${i % 5}`, [newEvent()], { expectedRevision: 'any' })));
    const head = (await store.headPosition())!;
    const intact = await store.checkChain({ until: head });
    expect(intact).toMatchObject({ events: 2_103, chained: 2_103, unchained: 0, firstBreak: null });
    expect(intact.head).toBe((await store.readAll({ from: 'start', maxCount: 5_000 })).at(-1)!.metadata.hash);

    const file = new Sqlite(path);
    // Stored as an older release did (another key order): the parsed check still proves it.
    file.prepare("UPDATE events SET data = '{\"nested\":{\"b\":1,\"a\":2}}' WHERE stream = 's' AND revision = 1").run();
    expect(await store.checkChain({ until: head })).toEqual(intact);
    // An edit breaks the chain at that event, even one written in the canonical form.
    file.prepare("UPDATE events SET data = '{\"nested\":{\"a\":3,\"b\":1}}' WHERE stream = 's' AND revision = 1").run();
    const position = (await store.readStream('s'))[1]!.position;
    const edited = await store.checkChain({ until: head });
    expect(edited.firstBreak).toMatchObject({ position, stream: 's', reason: expect.stringContaining('does not match') });
    // The broken event is not counted as chained, as ChainCheck counts.
    expect(edited).toMatchObject({ events: 2_103, chained: 2_102 });
    file.close();
  });

  it('reads pages beyond the first when catching up', async () => {
    const store = open(freshPath());
    await Promise.all(Array.from({ length: 2_500 }, (_, i) => store.append(`s-${i % 7}`, [newEvent()], { expectedRevision: 'any' })));
    const received = await take(store.subscribeToAll({ from: 'start' }), 2_500, ARRIVES_MS);
    expect(new Set(received.map((e) => e.position)).size).toBe(2_500);
  });
});

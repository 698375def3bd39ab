import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nextPageSize, PAGE_BYTES } from '../../src/eventstore/sqlite/catchUpSubscription.js';
import { EventLog, openLogFile } from '../../src/eventstore/sqlite/eventLog.js';
import { GroupCommitter, MAX_COMMIT_BYTES } from '../../src/eventstore/sqlite/groupCommitter.js';
import { sizedEvent } from '../support/sizedEvent.js';

/**
 * Issue 22 item 8 at the embedded event store: large events are written and read in bounded
 * slices, so that a bulk upsert of 5 MB does not hold the event loop for one long commit, nor
 * every subscription of the process for a page of 1,000 parsed 5 KB records.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-commitsize-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('page sizes of subscriptions', () => {
  // Given the last page (events, stored size), then the next page's size.
  const table: [string, number, number, number | undefined, number][] = [
    ['small events: the full page', 1000, 300_000, undefined, 1000],
    ['5 KB events: about PAGE_BYTES of them', 1000, 5_200_000, undefined, Math.floor((1000 * PAGE_BYTES) / 5_200_000)],
    ['huge events: never fewer than 16', 10, 100_000_000, undefined, 16],
    ['an empty page: the full page again', 0, 0, undefined, 1000],
    ['a smaller maximum (the persistent group)', 100, 1000, 500, 500],
  ];
  it.each(table)('%s', (_given, events, bytes, max, then) => {
    expect(nextPageSize(events, bytes, max)).toBe(then);
  });
});

describe('commit size', () => {
  it('large appends queued together commit in slices of about MAX_COMMIT_BYTES, all of them, in order', async () => {
    const db = openLogFile(join(dir, 'slices.db'));
    const log = new EventLog(db);
    const commits: number[] = [];
    const committer = new GroupCommitter(db, log, (head) => commits.push(head));
    const size = Math.ceil(MAX_COMMIT_BYTES / 3);
    const results = await Promise.all(Array.from({ length: 9 }, (_, i) => committer.enqueue({ stream: `s${i}`, events: [sizedEvent(size)], expectedRevision: 'no_stream' })));
    expect(results.map((result) => result.nextRevision)).toEqual(Array(9).fill(0));
    expect(commits.length).toBeGreaterThanOrEqual(3);
    expect(commits).toEqual([...commits].sort((a, b) => a - b));
    expect(commits.at(-1)).toBe(9);
    db.close();
  });

  it('never splits a claim from what depends on it, however large', async () => {
    const db = openLogFile(join(dir, 'chain.db'));
    const log = new EventLog(db);
    const commits: number[] = [];
    const committer = new GroupCommitter(db, log, (head) => commits.push(head));
    const size = Math.ceil(MAX_COMMIT_BYTES / 2);
    const chained = await committer.enqueueChain(
      [{ stream: 'claim', events: [sizedEvent(10)], expectedRevision: 'no_stream' }],
      Array.from({ length: 4 }, (_, i) => [{ stream: `record${i}`, events: [sizedEvent(size)], expectedRevision: 'no_stream' as const }]),
    );
    expect(chained.then.every((outcome) => outcome.status === 'fulfilled')).toBe(true);
    expect(commits).toEqual([5]);
    db.close();
  });

  it('small appends still share one commit', async () => {
    const db = openLogFile(join(dir, 'small.db'));
    const log = new EventLog(db);
    const commits: number[] = [];
    const committer = new GroupCommitter(db, log, (head) => commits.push(head));
    await Promise.all(Array.from({ length: 1000 }, (_, i) => committer.enqueue({ stream: `s${i}`, events: [sizedEvent(100)], expectedRevision: 'no_stream' })));
    expect(commits).toEqual([1000]);
    db.close();
  });
});

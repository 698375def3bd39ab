import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InsufficientStorage } from '../../src/core/errors.js';
import { EventLog, openLogFile } from '../../src/eventstore/sqlite/eventLog.js';
import { GroupCommitter } from '../../src/eventstore/sqlite/groupCommitter.js';
import { asStorageError, isDiskFull } from '../../src/sqlite/errors.js';
import { sizedEvent } from '../support/sizedEvent.js';

/**
 * Issue 22 item 7 at the embedded event store: SQLite's "disk full" (here forced with
 * max_page_count, which fails a write exactly as a full filesystem does) fails a whole group
 * commit with InsufficientStorage, and writes nothing. test/api/fullDisk.test.ts fills a real one.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-storagefull-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a full disk at the embedded event store', () => {
  it('fails every append of the commit with InsufficientStorage and writes none of them', async () => {
    const db = openLogFile(join(dir, 'events.db'));
    const log = new EventLog(db);
    const committer = new GroupCommitter(db, log, () => undefined);
    await committer.enqueue({ stream: 'a', events: [sizedEvent(10)], expectedRevision: 'no_stream' });
    const pages = (db.pragma('page_count', { simple: true }) as number) + 2;
    db.pragma(`max_page_count = ${pages}`);

    const appends = [
      committer.enqueue({ stream: 'b', events: [sizedEvent(10)], expectedRevision: 'no_stream' }),
      committer.enqueue({ stream: 'c', events: [sizedEvent(100_000)], expectedRevision: 'no_stream' }),
      committer.enqueue({ stream: 'd', events: [sizedEvent(10), sizedEvent(10)], expectedRevision: 'no_stream' }),
    ];
    const settled = await Promise.allSettled(appends);
    for (const outcome of settled) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(InsufficientStorage);
    }
    for (const stream of ['b', 'c', 'd']) expect(log.readStream(stream, false, -1)).toEqual([]);

    db.pragma('max_page_count = 1073741823');
    await expect(committer.enqueue({ stream: 'c', events: [sizedEvent(100_000)], expectedRevision: 'no_stream' })).resolves.toMatchObject({ nextRevision: 0 });
    db.close();
  });

  it('recognises SQLite and system disk-full errors, and nothing else', () => {
    const sqlite = (code: string, message: string) => Object.assign(new Error(message), { code });
    expect(isDiskFull(sqlite('SQLITE_FULL', 'database or disk is full'))).toBe(true);
    expect(isDiskFull(sqlite('SQLITE_IOERR_WRITE', 'disk I/O error: No space left on device (ENOSPC)'))).toBe(true);
    expect(isDiskFull(sqlite('ENOSPC', 'no space left on device'))).toBe(true);
    expect(isDiskFull(sqlite('SQLITE_IOERR_READ', 'disk I/O error'))).toBe(false);
    expect(isDiskFull(sqlite('SQLITE_BUSY', 'database is locked'))).toBe(false);
    expect(asStorageError(sqlite('SQLITE_FULL', 'database or disk is full'))).toBeInstanceOf(InsufficientStorage);
    const other = new Error('other');
    expect(asStorageError(other)).toBe(other);
  });
});

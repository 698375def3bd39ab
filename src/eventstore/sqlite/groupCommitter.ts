import { Conflict, Unavailable } from '../../core/errors.js';
import { isClaimStream, type AppendResult, type ChainResult, type ExpectedRevision, type StreamAppend } from '../port.js';
import { formatPosition } from '../position.js';
import { asStorageError, isDiskFull } from '../../sqlite/errors.js';
import { BUSY_TIMEOUT_MS, isBusy } from '../../sqlite/file.js';
import type { Db, EventLog } from './eventLog.js';

/**
 * Group commit: the fsync that an acknowledged append costs is shared. Appends queued in the same
 * turn of the event loop commit in one transaction; each append is checked and applied on its own
 * (a savepoint when it has several events), so one conflicting append fails alone.
 */

function checkExpected(stream: string, expected: ExpectedRevision, actual: number | undefined): void {
  const ok =
    expected === 'any' ||
    (expected === 'no_stream' && actual === undefined) ||
    (expected === 'stream_exists' && actual !== undefined) ||
    expected === actual;
  if (!ok) throw new Conflict(stream, String(expected), actual === undefined ? 'no_stream' : String(actual));
}

interface QueuedAppend {
  /** One append, or a group written all or none (in a savepoint). */
  parts: StreamAppend[];
  /** The claim of appendThen this append depends on; it is queued, and so tried, before this one. */
  after: QueuedAppend | undefined;
  written: boolean;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

interface Committed {
  result: AppendResult;
  lastSeq: number;
  /** The stored size of what was written. */
  bytes: number;
}

/**
 * About this much event text per transaction, then the rest of the queue commits after a turn of
 * the event loop. A commit runs synchronously on the thread that runs it (hashing, writing, fsync):
 * the API process's commit thread (threadedCommitter.ts), or any other caller's own, where one of
 * 1,000 records of 5 KB held every other request up for its whole length. Small appends never
 * reach it (a 1,000-record upsert of ordinary records is a fraction of it). A chain (a claim and
 * what depends on it, appendThen) is never split: gap-free numbers need them in one commit.
 */
export const MAX_COMMIT_BYTES = 1024 * 1024;

/** The hash the next event of this commit chains on (src/eventstore/chain.ts). */
interface Chain {
  head: string;
}

type Outcome = { append: QueuedAppend; committed: Committed } | { append: QueuedAppend; error: unknown };

export class GroupCommitter {
  private queue: QueuedAppend[] = [];
  private scheduled = false;
  private readonly commitBatch;
  private readonly appendOne;
  /** When BEGIN first found another process holding the write lock; null while it has not. */
  private busySince: number | null = null;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly log: EventLog,
    private readonly onCommitted: (headSeq: number) => void,
  ) {
    // Nested transaction functions run as savepoints: a failing append of several events rolls back alone.
    this.appendOne = db.transaction((append: QueuedAppend, created: number, chain: Chain) => this.write(append, created, chain));
    this.commitBatch = db.transaction((batch: QueuedAppend[]) => {
      const created = this.log.commitTime();
      const chain: Chain = { head: this.log.chainHead() };
      const outcomes: Outcome[] = [];
      let bytes = 0;
      for (const append of batch) {
        if (bytes >= MAX_COMMIT_BYTES && append.after === undefined) break;
        const outcome = this.tryAppend(append, created, chain);
        if ('committed' in outcome) bytes += outcome.committed.bytes;
        outcomes.push(outcome);
      }
      return outcomes;
    });
  }

  enqueue(append: StreamAppend): Promise<AppendResult> {
    const { promise } = this.push([append], undefined);
    this.schedule();
    return promise;
  }

  /**
   * appendThen: the claim and its dependents join the queue in order, and commit with the rest of
   * this turn of the event loop: the creates of one request, each with its reservations, share one
   * commit as plain appends do.
   */
  enqueueChain(first: StreamAppend[], then: StreamAppend[][]): Promise<ChainResult> {
    const claim = this.push(first, undefined);
    const dependents = Promise.allSettled(then.map((group) => this.push(group, claim.entry).promise));
    this.schedule();
    return claim.promise.then(async (result) => ({ first: result, then: await dependents }));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate rather than a microtask: appends from every request handled in this turn
    // of the event loop share the commit.
    setImmediate(() => this.flush());
  }

  private push(parts: StreamAppend[], after: QueuedAppend | undefined): { entry: QueuedAppend; promise: Promise<AppendResult> } {
    let entry!: QueuedAppend;
    const promise = new Promise<AppendResult>((resolve, reject) => {
      entry = { parts, after, written: false, resolve, reject };
    });
    this.queue.push(entry);
    return { entry, promise };
  }

  /**
   * Commits everything queued; promises settle only after COMMIT. `waitForLock`, when the store
   * closes: this is the last chance, so it waits for another process's write lock (busy_timeout).
   */
  flush(waitForLock = false): void {
    this.scheduled = false;
    if (this.retry) {
      if (!waitForLock) return; // the queue waits for the write lock, and commits with the retry
      clearTimeout(this.retry);
      this.retry = null;
    }
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    let outcomes: Outcome[];
    try {
      outcomes = waitForLock ? this.commitBatch.immediate(batch) : this.commitWithoutWaiting(batch);
    } catch (error) {
      if (!waitForLock && isBusy(error) && this.waitAgain()) {
        this.queue = batch;
        return;
      }
      this.busySince = null;
      const failure = isBusy(error) ? new Unavailable('the event store is busy, try again', { cause: error }) : asStorageError(error);
      for (const append of batch) append.reject(failure);
      return;
    }
    this.busySince = null;
    // What did not fit in this commit goes first in the next one, after a turn of the event loop.
    // On close (waitForLock) it commits at once: there is no next turn.
    if (outcomes.length < batch.length) this.queue = [...batch.slice(outcomes.length), ...this.queue];
    this.settle(outcomes);
    if (this.queue.length > 0 && waitForLock) this.flush(true);
    else if (outcomes.length < batch.length) this.schedule();
  }

  /**
   * IMMEDIATE takes the write lock up front, so that another writer process makes the commit fail
   * at BEGIN rather than halfway. With busy_timeout SQLite would sleep there, and an API process
   * of API_PROCESSES would serve nothing meanwhile: 1, 2, 5, 10 ms and longer, as the two
   * processes' commits kept meeting. So the lock is only tried here, and `flush` tries again
   * after a moment, with what the event loop has queued meanwhile in the same commit.
   */
  private commitWithoutWaiting(batch: QueuedAppend[]): Outcome[] {
    // Set by exec, not by a statement prepared once: SQLite applies PRAGMA busy_timeout when it
    // compiles it, so running a prepared one again changes nothing, and preparing the two once
    // left the whole connection (the groups' writes too) without a busy timeout.
    this.db.exec('PRAGMA busy_timeout = 0');
    try {
      return this.commitBatch.immediate(batch);
    } finally {
      this.db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  /** Schedules the next try, unless the lock has been out of reach for as long as busy_timeout allows. */
  private waitAgain(): boolean {
    const now = Date.now();
    this.busySince ??= now;
    if (now - this.busySince >= BUSY_TIMEOUT_MS) return false;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.flush();
    }, 0);
    return true;
  }

  private settle(outcomes: Outcome[]): void {
    let head = 0;
    for (const outcome of outcomes) {
      if ('committed' in outcome) {
        head = Math.max(head, outcome.committed.lastSeq);
        outcome.append.resolve(outcome.committed.result);
      } else {
        outcome.append.reject(outcome.error);
      }
    }
    if (head > 0) this.onCommitted(head);
  }

  private tryAppend(append: QueuedAppend, created: number, chain: Chain): Outcome {
    if (append.after && !append.after.written) {
      return { append, error: new Error('not appended: the claim it depends on failed') };
    }
    try {
      // One event is one INSERT, which SQLite undoes alone when it fails: only appends of several
      // events (or groups of appends) need a savepoint, two more statements per append.
      const single = append.parts.length === 1 && append.parts[0]!.events.length === 1;
      const committed = single ? this.write(append, created, chain) : this.appendOne(append, created, chain);
      append.written = true;
      return { append, committed };
    } catch (error) {
      // A full disk fails the whole commit. SQLite may also have rolled the transaction back
      // by itself (it does on SQLITE_FULL): the appends after this one would then each commit on
      // their own, outside the batch, while the batch reports a failure. Never go on without it.
      if (isDiskFull(error) || !this.db.inTransaction) throw error;
      return { append, error };
    }
  }

  /**
   * Writes every part in order; the first that fails throws, and the savepoint around a group
   * undoes the rest. The chain head moves only once the whole append is written: a failed one
   * leaves it as it was.
   */
  private write(append: QueuedAppend, created: number, chain: Chain): Committed {
    let head = chain.head;
    let bytes = 0;
    let lastSeq = 0;
    let nextRevision = -1;
    for (const part of append.parts) {
      const claim = isClaimStream(part.stream);
      // A new stream of the log is not looked up: its first row, revision 0, cannot be inserted
      // where the stream exists (its unique (stream, revision)), and only then is its revision
      // read, for the Conflict. A claim stream is always looked up: its index is not unique
      // (eventLog.ts, claimKey), and this transaction's write lock makes the look and the insert one step.
      const fresh = part.expectedRevision === 'no_stream' && !claim;
      const current = fresh ? undefined : this.log.streamRevision(part.stream, claim);
      if (!fresh) checkExpected(part.stream, part.expectedRevision, current);
      let revision = current ?? -1;
      for (const event of part.events) {
        revision += 1;
        if (claim) {
          bytes += this.log.insertClaim(part.stream, revision, event, created).bytes;
          continue;
        }
        const inserted = fresh && revision === 0 ? this.insertFirst(part.stream, () => this.log.insert(part.stream, 0, event, created, head)) : this.log.insert(part.stream, revision, event, created, head);
        lastSeq = inserted.seq;
        head = inserted.hash;
        bytes += inserted.bytes;
      }
      nextRevision = revision;
    }
    chain.head = head;
    // A claim has no place in the log: an append of claims alone reports the log's head.
    const position = lastSeq > 0 ? lastSeq : this.log.headSeq();
    return { result: { position: formatPosition(BigInt(position)), nextRevision }, lastSeq, bytes };
  }

  private insertFirst<T>(stream: string, insert: () => T): T {
    try {
      return insert();
    } catch (error) {
      const actual = isUniqueViolation(error) ? this.log.streamRevision(stream) : undefined;
      if (actual !== undefined) throw new Conflict(stream, 'no_stream', String(actual));
      throw error;
    }
  }
}

function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

import Database from 'better-sqlite3';
import { Conflict, Unavailable } from '../errors.js';
import type {
  AppendResult,
  ChainResult,
  EventFilter,
  EventMetadata,
  EventStore,
  ExpectedRevision,
  NewEvent,
  PersistentEvent,
  PersistentSubscription,
  PersistentSubscriptionOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeToAllOptions,
  Subscription,
} from './port.js';
import { BOUND_COUNT, openSqliteFile } from '../sqliteFile.js';
import { fileSignal, type FileSignal } from '../fileSignal.js';
import { formatPosition, parsePosition, type Position } from './position.js';

/**
 * The embedded event log: one SQLite file shared by the server and the `csr` CLI process.
 *
 * - Durability: WAL with synchronous=FULL, so an acknowledged append survives kill -9 and power loss.
 *   The fsync that costs is shared: appends queued in the same turn of the event loop commit in one
 *   transaction (group commit); each append is checked and applied in its own savepoint, so one
 *   conflicting append fails alone.
 * - Positions: the INTEGER autoincrement `seq` of the events table (commit = prepare = seq).
 * - Appending zero events is rejected with a RangeError: there is no position to report for an
 *   append that wrote nothing, and a command that decides nothing should not append.
 * - Live subscriptions are woken at once by appends of this process (any thread) and by a poll of
 *   max(seq) for other processes' appends (only while someone waits).
 * - Persistent subscription groups live in this process: the group's state (checkpoint, retry
 *   counts, parked events) is stored in the same file, but a group must be served by one process at
 *   a time. Two processes serving one group both deliver every event (still at least once, never
 *   lost). The group's filter and maxRetryCount come from its first consumer in the process;
 *   bufferSize applies per consumer. A new group starts at the beginning of the log.
 */
export function openSqliteEventStore(options: { path: string }): EventStore {
  return new SqliteEventStore(openDatabase(options.path), options.path);
}

/**
 * Appends by another process reach live subscribers of this one after one poll of max(seq). That
 * is on the path of every write made by another API process (API_PROCESSES) to the projector, so
 * polls come every 2 ms while the log grows, backing off to 20 ms while it is quiet (an idle
 * projector then polls 50 times a second, not 500).
 */
const POLL_MIN_MS = 2;
const POLL_MAX_MS = 20;
const PAGE_SIZE = 1_000;
const GROUP_PAGE_SIZE = 500;
/** A group writes its checkpoint at most this often: every write is an fsync on the event loop. */
const GROUP_PERSIST_DELAY_MS = 100;
const DEFAULT_MAX_RETRY_COUNT = 10;
const DEFAULT_BUFFER_SIZE = 100;

// UNIQUE (stream, revision) doubles as the index on stream (its leftmost column); a separate one
// would only cost writes.
const EVENTS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    id       TEXT    NOT NULL UNIQUE,
    stream   TEXT    NOT NULL,
    revision INTEGER NOT NULL,
    type     TEXT    NOT NULL,
    created  INTEGER NOT NULL,
    data     TEXT    NOT NULL,
    metadata TEXT    NOT NULL,
    UNIQUE (stream, revision)
  );
`;

const GROUPS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS persistent_groups (
    name       TEXT    PRIMARY KEY,
    checkpoint INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS persistent_retries (
    grp         TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    retry_count INTEGER NOT NULL,
    PRIMARY KEY (grp, seq)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS persistent_parked (
    grp       TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    reason    TEXT    NOT NULL,
    parked_at INTEGER NOT NULL,
    PRIMARY KEY (grp, seq)
  ) WITHOUT ROWID;
`;

const COLUMNS = 'seq, id, stream, revision, type, created, data, metadata';

type Db = Database.Database;

interface EventRow {
  seq: number;
  id: string;
  stream: string;
  revision: number;
  type: string;
  created: number;
  data: string;
  metadata: string;
}

interface LogEntry {
  seq: number;
  event: RecordedEvent;
}

interface Page {
  entries: LogEntry[];
  /** Everything up to this seq has been looked at (matching or not). */
  cursor: number;
  /** True when the page reached the head of the log as it was when read. */
  caughtUp: boolean;
}

function openDatabase(path: string): Db {
  const db = openSqliteFile(path, { synchronous: 'FULL' });
  db.exec(EVENTS_SCHEMA);
  return db;
}

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    type: row.type,
    stream: row.stream,
    revision: row.revision,
    position: formatPosition(BigInt(row.seq)),
    created: new Date(row.created),
    data: JSON.parse(row.data) as Record<string, unknown>,
    metadata: JSON.parse(row.metadata) as EventMetadata,
  };
}

function positionToSeq(position: Position): number {
  const { commit } = parsePosition(position);
  if (commit > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`position out of range: ${position}`);
  return Number(commit);
}

/** Prefix matching in SQL: instr() finds the first occurrence, which is 1 exactly for a prefix. */
function filterClause(filter: EventFilter | undefined): string {
  if (!filter) return '';
  if (filter.streamPrefixes.length === 0) return ' AND 0';
  return ` AND (${filter.streamPrefixes.map(() => 'instr(stream, ?) = 1').join(' OR ')})`;
}

function validateFilter(filter: EventFilter | undefined): void {
  if (filter === undefined) return;
  if (!Array.isArray(filter.streamPrefixes) || !filter.streamPrefixes.every((p) => typeof p === 'string')) {
    throw new RangeError('filter.streamPrefixes must be an array of strings');
  }
}

function validateCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
}

function validateAppend(stream: string, events: NewEvent[], expected: ExpectedRevision): void {
  if (typeof stream !== 'string' || stream.length === 0) throw new RangeError('stream name must be a non-empty string');
  if (events.length === 0) throw new RangeError(`append to ${stream} needs at least one event`);
  if (typeof expected === 'number') validateCount('expected revision', expected, 0);
  else if (expected !== 'any' && expected !== 'no_stream' && expected !== 'stream_exists') {
    throw new RangeError(`unknown expected revision: ${String(expected)}`);
  }
}

function checkExpected(stream: string, expected: ExpectedRevision, actual: number | undefined): void {
  const ok =
    expected === 'any' ||
    (expected === 'no_stream' && actual === undefined) ||
    (expected === 'stream_exists' && actual !== undefined) ||
    expected === actual;
  if (!ok) throw new Conflict(stream, String(expected), actual === undefined ? 'no_stream' : String(actual));
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

// ---------------------------------------------------------------------------------------------
// The events table

class EventLog {
  private readonly streamRevisionStmt;
  private readonly insertStmt;
  private readonly lastCreatedStmt;
  private readonly headSeqStmt;
  private readonly forwardsStmt;
  private readonly backwardsStmt;
  /** Page queries by number of filter prefixes (-1: no filter). */
  private readonly pageStmts = new Map<number, Database.Statement<unknown[], EventRow>>();

  constructor(private readonly db: Db) {
    this.streamRevisionStmt = db.prepare<[string], { revision: number }>(
      'SELECT revision FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1',
    );
    this.insertStmt = db.prepare<[string, string, number, string, number, string, string]>(
      'INSERT INTO events (id, stream, revision, type, created, data, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.lastCreatedStmt = db.prepare<[], { created: number }>('SELECT created FROM events ORDER BY seq DESC LIMIT 1');
    this.headSeqStmt = db.prepare<[], { head: number | null }>('SELECT max(seq) AS head FROM events');
    this.forwardsStmt = db.prepare<[string, number], EventRow>(
      `SELECT ${COLUMNS} FROM events WHERE stream = ? ORDER BY revision ASC LIMIT ${BOUND_COUNT}`,
    );
    this.backwardsStmt = db.prepare<[string, number], EventRow>(
      `SELECT ${COLUMNS} FROM events WHERE stream = ? ORDER BY revision DESC LIMIT ${BOUND_COUNT}`,
    );
  }

  streamRevision(stream: string): number | undefined {
    return this.streamRevisionStmt.get(stream)?.revision;
  }

  insert(stream: string, revision: number, event: NewEvent, created: number): number {
    const data = JSON.stringify(event.data);
    const metadata = JSON.stringify(event.metadata);
    return Number(this.insertStmt.run(event.id, stream, revision, event.type, created, data, metadata).lastInsertRowid);
  }

  /** Read inside the write transaction: commit times never go backwards along the log, even
   *  when the clock does or another process's clock differs. */
  commitTime(): number {
    return Math.max(Date.now(), this.lastCreatedStmt.get()?.created ?? 0);
  }

  headSeq(): number {
    return this.headSeqStmt.get()?.head ?? 0;
  }

  readStream(stream: string, backwards: boolean, maxCount: number): RecordedEvent[] {
    const stmt = backwards ? this.backwardsStmt : this.forwardsStmt;
    return stmt.all(stream, maxCount).map(toRecordedEvent);
  }

  /** Events after `cursor` matching `filter`, bounded by the head read first so that an empty
   *  page proves nothing matching exists up to that head. */
  readAfter(cursor: number, filter: EventFilter | undefined, limit: number): Page {
    const head = this.headSeq();
    const rows = this.pageStatement(filter).all(cursor, head, ...(filter?.streamPrefixes ?? []), limit);
    const full = rows.length === limit;
    const last = rows[rows.length - 1];
    return {
      entries: rows.map((row) => ({ seq: row.seq, event: toRecordedEvent(row) })),
      cursor: full && last ? last.seq : Math.max(cursor, head),
      caughtUp: !full,
    };
  }

  private pageStatement(filter: EventFilter | undefined): Database.Statement<unknown[], EventRow> {
    const key = filter ? filter.streamPrefixes.length : -1;
    let stmt = this.pageStmts.get(key);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], EventRow>(
        `SELECT ${COLUMNS} FROM events WHERE seq > ? AND seq <= ?${filterClause(filter)} ORDER BY seq LIMIT ${BOUND_COUNT}`,
      );
      this.pageStmts.set(key, stmt);
    }
    return stmt;
  }
}

// ---------------------------------------------------------------------------------------------
// Group commit

interface QueuedAppend {
  stream: string;
  events: NewEvent[];
  expected: ExpectedRevision;
  /** The claim of appendThen this append depends on; it is queued, and so tried, before this one. */
  after: QueuedAppend | undefined;
  written: boolean;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

interface Committed {
  result: AppendResult;
  lastSeq: number;
}

type Outcome = { append: QueuedAppend; committed: Committed } | { append: QueuedAppend; error: unknown };

class GroupCommitter {
  private queue: QueuedAppend[] = [];
  private scheduled = false;
  private readonly commitBatch;
  private readonly appendOne;

  constructor(
    db: Db,
    private readonly log: EventLog,
    private readonly onCommitted: (headSeq: number) => void,
  ) {
    // Nested transaction functions run as savepoints: a failing append of several events rolls back alone.
    this.appendOne = db.transaction((append: QueuedAppend, created: number) => this.write(append, created));
    this.commitBatch = db.transaction((batch: QueuedAppend[]) => {
      const created = this.log.commitTime();
      return batch.map((append) => this.tryAppend(append, created));
    });
  }

  enqueue(append: StreamAppend): Promise<AppendResult> {
    const { promise } = this.push(append, undefined);
    if (!this.scheduled) {
      this.scheduled = true;
      // setImmediate rather than a microtask: appends from every request handled in this turn
      // of the event loop share the commit.
      setImmediate(() => this.flush());
    }
    return promise;
  }

  /**
   * appendThen: the claim and its dependents join the queue in order, and everything queued
   * commits now. Its callers have gathered their batch already (AutoNumbers gathers a turn's
   * requests), so waiting for the next turn would only add latency.
   */
  enqueueChain(first: StreamAppend, then: StreamAppend[]): Promise<ChainResult> {
    const claim = this.push(first, undefined);
    const dependents = Promise.allSettled(then.map((append) => this.push(append, claim.entry).promise));
    this.flush();
    return claim.promise.then(async (result) => ({ first: result, then: await dependents }));
  }

  private push(append: StreamAppend, after: QueuedAppend | undefined): { entry: QueuedAppend; promise: Promise<AppendResult> } {
    let entry!: QueuedAppend;
    const promise = new Promise<AppendResult>((resolve, reject) => {
      entry = { stream: append.stream, events: append.events, expected: append.expectedRevision, after, written: false, resolve, reject };
    });
    this.queue.push(entry);
    return { entry, promise };
  }

  /** Commits everything queued; promises settle only after COMMIT. */
  flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    let outcomes: Outcome[];
    try {
      // IMMEDIATE takes the write lock up front, so a concurrent writer process makes us wait
      // (busy_timeout) instead of failing a read-to-write upgrade.
      outcomes = this.commitBatch.immediate(batch);
    } catch (error) {
      const failure = isBusy(error) ? new Unavailable('the event store is busy, try again', { cause: error }) : error;
      for (const append of batch) append.reject(failure);
      return;
    }
    this.settle(outcomes);
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

  private tryAppend(append: QueuedAppend, created: number): Outcome {
    if (append.after && !append.after.written) {
      return { append, error: new Error(`not appended to ${append.stream}: the append to ${append.after.stream} it depends on failed`) };
    }
    try {
      // One event is one INSERT, which SQLite undoes alone when it fails: only appends of several
      // events need a savepoint, two more statements per append.
      const committed = append.events.length === 1 ? this.write(append, created) : this.appendOne(append, created);
      append.written = true;
      return { append, committed };
    } catch (error) {
      return { append, error };
    }
  }

  private write(append: QueuedAppend, created: number): Committed {
    const current = this.log.streamRevision(append.stream);
    checkExpected(append.stream, append.expected, current);
    let revision = current ?? -1;
    let lastSeq = 0;
    for (const event of append.events) {
      revision += 1;
      lastSeq = this.log.insert(append.stream, revision, event, created);
    }
    return { result: { position: formatPosition(BigInt(lastSeq)), nextRevision: revision }, lastSeq };
  }
}

// ---------------------------------------------------------------------------------------------
// Waiting for the log to grow

interface Waiter {
  after: number;
  resolve(): void;
}

interface Wait {
  promise: Promise<void>;
  cancel(): void;
}

/** Wakes waiters once the log holds an event after theirs: immediately for this instance's
 *  appends, by polling for other processes' appends (the poll runs only while someone waits). */
class LogWatcher {
  private head: number;
  private readonly waiters = new Set<Waiter>();
  private timer: NodeJS.Timeout | undefined;
  private delay = POLL_MIN_MS;

  constructor(private readonly readHead: () => number) {
    this.head = readHead();
  }

  wait(after: number): Wait {
    let waiter: Waiter | undefined;
    const promise = new Promise<void>((resolve) => {
      waiter = { after, resolve };
    });
    const registered = waiter!;
    if (this.head > after) {
      registered.resolve();
    } else {
      this.waiters.add(registered);
      this.startPolling();
    }
    return { promise, cancel: () => this.release(registered) };
  }

  advance(head: number): void {
    if (head <= this.head) return;
    this.head = head;
    for (const waiter of this.waiters) if (waiter.after < head) this.release(waiter);
  }

  stop(): void {
    for (const waiter of this.waiters) this.release(waiter);
  }

  private release(waiter: Waiter): void {
    this.waiters.delete(waiter);
    waiter.resolve();
    if (this.waiters.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private startPolling(): void {
    // Not unref'd: a process whose only work is a live subscription (ROLES=projector) must stay up.
    this.timer ??= setTimeout(() => this.poll(), this.delay);
  }

  private poll(): void {
    this.timer = undefined;
    const before = this.head;
    try {
      this.advance(this.readHead());
    } catch {
      // Let the waiters read again: the failure then surfaces in their own iteration.
      this.stop();
      return;
    }
    this.delay = this.head > before ? POLL_MIN_MS : Math.min(this.delay * 2, POLL_MAX_MS);
    if (this.waiters.size > 0) this.startPolling();
  }
}

// ---------------------------------------------------------------------------------------------
// Catch-up subscriptions

class CatchUpSubscription implements Subscription {
  private closed = false;
  private cancelWait: (() => void) | undefined;
  private readonly iterator: AsyncGenerator<RecordedEvent>;

  constructor(
    private readonly log: EventLog,
    private readonly watcher: LogWatcher,
    private cursor: number,
    private readonly filter: EventFilter | undefined,
    private readonly onClose: (subscription: CatchUpSubscription) => void,
  ) {
    this.iterator = this.run();
  }

  [Symbol.asyncIterator](): AsyncIterator<RecordedEvent> {
    return this.iterator;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelWait?.();
    this.onClose(this);
  }

  /** Reads one page at a time, only when the consumer asks for more. */
  private async *run(): AsyncGenerator<RecordedEvent> {
    try {
      while (!this.closed) {
        const page = this.log.readAfter(this.cursor, this.filter, PAGE_SIZE);
        for (const entry of page.entries) {
          yield entry.event;
          if (this.closed) return;
        }
        this.cursor = page.cursor;
        if (page.caughtUp) await this.waitForMore();
      }
    } finally {
      await this.close();
    }
  }

  private async waitForMore(): Promise<void> {
    const wait = this.watcher.wait(this.cursor);
    this.cancelWait = wait.cancel;
    await wait.promise;
    this.cancelWait = undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Persistent subscriptions

interface ParkedRecord {
  seq: number;
  reason: string;
  parkedAt: number;
}

interface GroupState {
  checkpoint: number;
  retries: Map<number, number>;
  parked: Set<number>;
}

/** The group tables, created on first use of a persistent subscription. */
class GroupTables {
  private readonly ensureStmt;
  private readonly checkpointStmt;
  private readonly retriesStmt;
  private readonly parkedStmt;
  private readonly saveCheckpointStmt;
  private readonly saveRetryStmt;
  private readonly saveParkedStmt;
  private readonly forgetRetriesStmt;
  private readonly loadTx;
  readonly save;

  constructor(db: Db) {
    db.exec(GROUPS_SCHEMA);
    this.ensureStmt = db.prepare<[string]>(
      'INSERT INTO persistent_groups (name, checkpoint) VALUES (?, 0) ON CONFLICT (name) DO NOTHING',
    );
    this.checkpointStmt = db.prepare<[string], { checkpoint: number }>(
      'SELECT checkpoint FROM persistent_groups WHERE name = ?',
    );
    this.retriesStmt = db.prepare<[string, number], { seq: number; retry_count: number }>(
      'SELECT seq, retry_count FROM persistent_retries WHERE grp = ? AND seq > ?',
    );
    this.parkedStmt = db.prepare<[string, number], { seq: number }>(
      'SELECT seq FROM persistent_parked WHERE grp = ? AND seq > ?',
    );
    // max(): a checkpoint never moves back, even if a second process serves the group by mistake.
    this.saveCheckpointStmt = db.prepare<[number, string]>(
      'UPDATE persistent_groups SET checkpoint = max(checkpoint, ?) WHERE name = ?',
    );
    this.saveRetryStmt = db.prepare<[string, number, number]>(
      `INSERT INTO persistent_retries (grp, seq, retry_count) VALUES (?, ?, ?)
       ON CONFLICT (grp, seq) DO UPDATE SET retry_count = excluded.retry_count`,
    );
    this.saveParkedStmt = db.prepare<[string, number, string, number]>(
      `INSERT INTO persistent_parked (grp, seq, reason, parked_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (grp, seq) DO UPDATE SET reason = excluded.reason, parked_at = excluded.parked_at`,
    );
    this.forgetRetriesStmt = db.prepare<[string, number]>('DELETE FROM persistent_retries WHERE grp = ? AND seq <= ?');
    this.loadTx = db.transaction((name: string): GroupState => {
      this.ensureStmt.run(name);
      const checkpoint = this.checkpointStmt.get(name)?.checkpoint ?? 0;
      const retries = new Map(this.retriesStmt.all(name, checkpoint).map((r) => [r.seq, r.retry_count] as const));
      const parked = new Set(this.parkedStmt.all(name, checkpoint).map((r) => r.seq));
      return { checkpoint, retries, parked };
    });
    this.save = db.transaction(
      (name: string, checkpoint: number, retries: Map<number, number>, parked: ParkedRecord[]) => {
        for (const [seq, count] of retries) this.saveRetryStmt.run(name, seq, count);
        for (const p of parked) this.saveParkedStmt.run(name, p.seq, p.reason, p.parkedAt);
        this.saveCheckpointStmt.run(checkpoint, name);
        this.forgetRetriesStmt.run(name, checkpoint);
      },
    );
  }

  /** Creates the group when missing and returns what it remembers. */
  load(name: string): GroupState {
    return this.loadTx.immediate(name);
  }
}

interface Entry {
  seq: number;
  event: RecordedEvent;
  retryCount: number;
  holder: Consumer | undefined;
  /** Identifies the current hand-out; acks of an earlier hand-out are ignored. */
  token: object | undefined;
}

interface GroupSettings {
  filter: EventFilter | undefined;
  maxRetryCount: number;
}

type Settlement = 'ack' | 'retry' | 'park';

/**
 * One group's state in this process, shared by its competing consumers. The checkpoint is the seq
 * before the oldest outstanding (queued or handed out) event, or the read cursor when none is:
 * everything up to it is acked, parked or outside the filter.
 */
class PersistentGroup {
  /** Read from the log and not yet done; insertion order is log order, so the first is the oldest. */
  private readonly outstanding = new Map<number, Entry>();
  /** Waiting to be handed out; retries go to the front. */
  private readonly queue: Entry[] = [];
  private readonly consumers: Consumer[] = [];
  private roundRobin = 0;
  private readCursor: number;
  private checkpoint: number;
  private readonly knownRetries: Map<number, number>;
  private readonly knownParked: Set<number>;
  private readonly unsavedRetries = new Map<number, number>();
  private unsavedParked: ParkedRecord[] = [];
  private dirty = false;
  private persistTimer: NodeJS.Timeout | undefined;
  private feeding = false;
  private cancelWait: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly name: string,
    private readonly settings: GroupSettings,
    private readonly tables: GroupTables,
    private readonly log: EventLog,
    private readonly watcher: LogWatcher,
  ) {
    const state = tables.load(name);
    this.checkpoint = state.checkpoint;
    this.readCursor = state.checkpoint;
    this.knownRetries = state.retries;
    this.knownParked = state.parked;
  }

  attach(bufferSize: number): Consumer {
    if (this.stopped) throw new Error('the event store is closed');
    const consumer = new Consumer(this, bufferSize);
    this.consumers.push(consumer);
    return consumer;
  }

  /** A consumer left: what it held goes back to the others (or to the next consumer). */
  detach(consumer: Consumer, held: Entry[]): void {
    this.consumers.splice(this.consumers.indexOf(consumer), 1);
    for (const entry of held.sort((a, b) => b.seq - a.seq)) this.requeue(entry);
    if (!this.consumers.some((c) => c.hungry)) this.cancelWait?.();
    this.dispatch();
    if (this.consumers.length === 0 && !this.stopped) this.persistOrRetryLater();
  }

  /** The adapter is closing: end the consumers and write what the group knows. */
  stop(): void {
    this.stopped = true;
    for (const consumer of [...this.consumers]) consumer.end();
    this.cancelWait?.();
    this.persist();
  }

  /** Hands queued events to hungry consumers in turn; reads the log when the queue runs dry. */
  dispatch(): void {
    while (this.queue.length > 0) {
      const consumer = this.nextHungryConsumer();
      if (!consumer) return;
      consumer.deliver(this.handOut(this.queue.shift()!, consumer));
    }
    if (this.consumers.some((c) => c.hungry)) this.startFeeding();
  }

  private nextHungryConsumer(): Consumer | undefined {
    const count = this.consumers.length;
    for (let i = 0; i < count; i++) {
      const index = (this.roundRobin + i) % count;
      const consumer = this.consumers[index]!;
      if (consumer.hungry) {
        this.roundRobin = (index + 1) % count;
        return consumer;
      }
    }
    return undefined;
  }

  private handOut(entry: Entry, consumer: Consumer): { entry: Entry; value: PersistentEvent } {
    const token = {};
    entry.holder = consumer;
    entry.token = token;
    const value: PersistentEvent = {
      event: entry.event,
      retryCount: entry.retryCount,
      ack: async () => this.settle(entry, token, 'ack', ''),
      nack: async (action, reason) => this.settle(entry, token, action, reason),
    };
    return { entry, value };
  }

  private settle(entry: Entry, token: object, action: Settlement, reason: string): void {
    if (entry.token !== token || this.stopped) return;
    entry.holder!.release(entry);
    entry.holder = undefined;
    entry.token = undefined;
    if (action === 'ack') this.finish(entry);
    else if (action === 'park') this.park(entry, reason);
    else if (entry.retryCount >= this.settings.maxRetryCount) {
      this.park(entry, `retried ${entry.retryCount} times (maxRetryCount ${this.settings.maxRetryCount}): ${reason}`);
    } else this.requeue(entry);
    this.dispatch();
  }

  private requeue(entry: Entry): void {
    entry.holder = undefined;
    entry.token = undefined;
    entry.retryCount += 1;
    this.unsavedRetries.set(entry.seq, entry.retryCount);
    this.queue.unshift(entry);
    this.schedulePersist();
  }

  private park(entry: Entry, reason: string): void {
    this.unsavedParked.push({ seq: entry.seq, reason, parkedAt: Date.now() });
    this.finish(entry);
  }

  private finish(entry: Entry): void {
    this.outstanding.delete(entry.seq);
    this.advanceCheckpoint();
  }

  private advanceCheckpoint(): void {
    const oldest = this.outstanding.keys().next();
    const candidate = oldest.done ? this.readCursor : oldest.value - 1;
    if (candidate > this.checkpoint) {
      this.checkpoint = candidate;
      this.schedulePersist();
    }
  }

  private startFeeding(): void {
    if (this.feeding || this.stopped) return;
    this.feeding = true;
    this.feed().catch((error: unknown) => {
      for (const consumer of this.consumers) consumer.fail(error);
    });
  }

  private async feed(): Promise<void> {
    try {
      while (!this.stopped && this.queue.length === 0 && this.consumers.some((c) => c.hungry)) {
        const page = this.log.readAfter(this.readCursor, this.settings.filter, GROUP_PAGE_SIZE);
        for (const entry of page.entries) this.enqueueNew(entry);
        this.readCursor = page.cursor;
        // Events outside the filter or parked before a restart are done without a hand-out.
        this.advanceCheckpoint();
        this.dispatch();
        if (page.caughtUp && this.queue.length === 0) await this.waitForLog();
      }
    } finally {
      // Cleared synchronously when the loop ends, so a dispatch right after restarts feeding.
      this.feeding = false;
    }
  }

  private enqueueNew({ seq, event }: LogEntry): void {
    if (this.knownParked.delete(seq)) return;
    const retryCount = this.knownRetries.get(seq) ?? 0;
    this.knownRetries.delete(seq);
    const entry: Entry = { seq, event, retryCount, holder: undefined, token: undefined };
    this.outstanding.set(seq, entry);
    this.queue.push(entry);
  }

  private async waitForLog(): Promise<void> {
    const wait = this.watcher.wait(this.readCursor);
    this.cancelWait = wait.cancel;
    await wait.promise;
    this.cancelWait = undefined;
  }

  private schedulePersist(): void {
    this.dirty = true;
    this.persistTimer ??= setTimeout(() => {
      this.persistTimer = undefined;
      this.persistOrRetryLater();
    }, GROUP_PERSIST_DELAY_MS);
  }

  /** A failed background write loses nothing (at least once): keep the changes and try again. */
  private persistOrRetryLater(): void {
    try {
      this.persist();
    } catch {
      this.schedulePersist();
    }
  }

  private persist(): void {
    if (this.persistTimer) clearTimeout(this.persistTimer);
    this.persistTimer = undefined;
    if (!this.dirty) return;
    this.tables.save(this.name, this.checkpoint, this.unsavedRetries, this.unsavedParked);
    this.unsavedRetries.clear();
    this.unsavedParked = [];
    this.dirty = false;
  }
}

interface Request {
  resolve(result: IteratorResult<PersistentEvent>): void;
  reject(error: unknown): void;
}

const DONE: IteratorResult<PersistentEvent> = { done: true, value: undefined };

/** One consumer of a group: pulls events (at most bufferSize un-acked) as its iterator asks. */
class Consumer implements PersistentSubscription, AsyncIterator<PersistentEvent> {
  private readonly inFlight = new Set<Entry>();
  private readonly requests: Request[] = [];
  private closed = false;

  constructor(
    private readonly group: PersistentGroup,
    private readonly bufferSize: number,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<PersistentEvent> {
    return this;
  }

  get hungry(): boolean {
    return !this.closed && this.requests.length > 0 && this.inFlight.size < this.bufferSize;
  }

  next(): Promise<IteratorResult<PersistentEvent>> {
    if (this.closed) return Promise.resolve(DONE);
    return new Promise((resolve, reject) => {
      this.requests.push({ resolve, reject });
      this.group.dispatch();
    });
  }

  async return(): Promise<IteratorResult<PersistentEvent>> {
    await this.close();
    return DONE;
  }

  async close(): Promise<void> {
    this.end();
  }

  /** Stops this consumer and gives back what it held, un-acked. */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const request of this.requests.splice(0)) request.resolve(DONE);
    const held = [...this.inFlight];
    this.inFlight.clear();
    this.group.detach(this, held);
  }

  deliver({ entry, value }: { entry: Entry; value: PersistentEvent }): void {
    this.inFlight.add(entry);
    this.requests.shift()!.resolve({ done: false, value });
  }

  release(entry: Entry): void {
    this.inFlight.delete(entry);
  }

  fail(error: unknown): void {
    for (const request of this.requests.splice(0)) request.reject(error);
  }
}

// ---------------------------------------------------------------------------------------------
// The adapter

class SqliteEventStore implements EventStore {
  private closed = false;
  private readonly log: EventLog;
  private readonly watcher: LogWatcher;
  private readonly committer: GroupCommitter;
  private readonly subscriptions = new Set<CatchUpSubscription>();
  private readonly groups = new Map<string, PersistentGroup>();
  private groupTables: GroupTables | undefined;
  /** Commits of this file by other threads of the process wake our subscribers at once. */
  private readonly commits: FileSignal<number>;

  constructor(
    private readonly db: Db,
    path: string,
  ) {
    this.log = new EventLog(db);
    this.watcher = new LogWatcher(() => this.log.headSeq());
    this.commits = fileSignal<number>('log', path, (head) => this.watcher.advance(head));
    this.committer = new GroupCommitter(db, this.log, (head) => {
      this.watcher.advance(head);
      this.commits.post(head);
    });
  }

  async append(stream: string, events: NewEvent[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    this.assertOpen();
    validateAppend(stream, events, options.expectedRevision);
    return this.committer.enqueue({ stream, events, expectedRevision: options.expectedRevision });
  }

  async appendThen(first: StreamAppend, then: StreamAppend[]): Promise<ChainResult> {
    this.assertOpen();
    for (const append of [first, ...then]) validateAppend(append.stream, append.events, append.expectedRevision);
    return this.committer.enqueueChain(first, then);
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const maxCount = options.maxCount ?? -1;
    if (options.maxCount !== undefined) validateCount('maxCount', maxCount, 0);
    return this.log.readStream(stream, options.direction === 'backwards', maxCount);
  }

  subscribeToAll(options: SubscribeToAllOptions): Subscription {
    this.assertOpen();
    validateFilter(options.filter);
    const from = options.from === 'start' ? 0 : positionToSeq(options.from);
    const subscription = new CatchUpSubscription(this.log, this.watcher, from, options.filter, (s) =>
      this.subscriptions.delete(s),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  persistentSubscription(group: string, options: PersistentSubscriptionOptions = {}): PersistentSubscription {
    this.assertOpen();
    if (typeof group !== 'string' || group.length === 0) throw new RangeError('group name must be a non-empty string');
    const bufferSize = options.bufferSize ?? DEFAULT_BUFFER_SIZE;
    validateCount('bufferSize', bufferSize, 1);
    return (this.groups.get(group) ?? this.createGroup(group, options)).attach(bufferSize);
  }

  async headPosition(): Promise<Position | null> {
    this.assertOpen();
    const head = this.log.headSeq();
    return head === 0 ? null : formatPosition(BigInt(head));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Callers of queued appends were promised durability or an error, not silence.
    this.committer.flush();
    for (const subscription of [...this.subscriptions]) await subscription.close();
    for (const group of this.groups.values()) group.stop();
    this.watcher.stop();
    this.commits.close();
    this.db.close();
  }

  private createGroup(name: string, options: PersistentSubscriptionOptions): PersistentGroup {
    const maxRetryCount = options.maxRetryCount ?? DEFAULT_MAX_RETRY_COUNT;
    validateCount('maxRetryCount', maxRetryCount, 0);
    validateFilter(options.filter);
    this.groupTables ??= new GroupTables(this.db);
    const group = new PersistentGroup(
      name,
      { filter: options.filter, maxRetryCount },
      this.groupTables,
      this.log,
      this.watcher,
    );
    this.groups.set(name, group);
    return group;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the event store is closed');
  }
}

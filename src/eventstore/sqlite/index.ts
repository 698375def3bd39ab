import type { Worker } from 'node:worker_threads';
import { asGroup, isClaimStream } from '../port.js';
import { validateAppend, validateCount } from '../callChecks.js';
import type {
  AppendGroup,
  AppendResult,
  ChainResult,
  EventFilter,
  EventStore,
  ExpectedRevision,
  NewEvent,
  PersistentSubscription,
  PersistentSubscriptionOptions,
  ChainReport,
  CheckChainOptions,
  ReadAllOptions,
  ReadStreamOptions,
  ReadStreamsOptions,
  StreamsPage,
  StreamEvent,
  RecordedEvent,
  SubscribeToAllOptions,
  Subscription,
} from '../port.js';
import { fileSignal, type FileSignal } from '../../sqlite/fileSignal.js';
import { DEFAULT_RETRY_BACKOFF } from '../port.js';
import { hashOf } from '../chain.js';
import { formatPosition, parsePosition, type Position } from '../position.js';
import { CatchUpSubscription } from './catchUpSubscription.js';
import { chainThreadFits, checkChainOnThread } from './chainOnThread.js';
import { EventLog, openLogFile, prefixEnd, type Db } from './eventLog.js';
import { GroupCommitter } from './groupCommitter.js';
import { COMMIT_THREAD_SCRIPT, ThreadedCommitter } from './threadedCommitter.js';
import { fileThreadFits } from '../../sqlite/fileThread.js';
import { GroupTables } from './groupTables.js';
import { LogWatcher } from './logWatcher.js';
import { PersistentGroup } from './persistentGroup.js';
import { checkStoredChain } from './storedChain.js';

/**
 * The embedded event log: one SQLite file shared by the server and the `csr` CLI process.
 *
 * - Durability: WAL with synchronous=FULL, so an acknowledged append survives kill -9 and power loss.
 *   The fsync that costs is shared: appends queued in the same turn of the event loop commit in one
 *   transaction (group commit); each append is checked and applied in its own savepoint, so one
 *   conflicting append fails alone. The API process commits on a thread of its own, so its event
 *   loop does not wait through the fsync (`commitThread`, threadedCommitter.ts).
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
 *
 * The parts live in `sqlite/`: the events table (`eventLog`), group commit, the log watcher that
 * wakes live subscribers, catch-up subscriptions, and persistent groups with their consumers.
 */
/**
 * `commitThread`: commit on a thread of its own where the machine has a second core
 * (threadedCommitter.ts); a URL names the thread's script (tests running the sources give the
 * built one).
 */
export function openSqliteEventStore(options: { path: string; commitThread?: boolean | URL }): EventStore {
  const script = options.commitThread instanceof URL ? options.commitThread : COMMIT_THREAD_SCRIPT;
  const commitThread = Boolean(options.commitThread) && fileThreadFits(script, options.path);
  return new SqliteEventStore(openLogFile(options.path), options.path, commitThread ? script : null);
}

const DEFAULT_MAX_RETRY_COUNT = 10;
const DEFAULT_BUFFER_SIZE = 100;


function validateGroupName(group: string): void {
  if (typeof group !== 'string' || group.length === 0) throw new RangeError('group name must be a non-empty string');
}

function positionToSeq(position: Position): number {
  const { commit } = parsePosition(position);
  if (commit > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`position out of range: ${position}`);
  return Number(commit);
}

function validateFilter(filter: EventFilter | undefined): void {
  if (filter === undefined) return;
  if (!Array.isArray(filter.streamPrefixes) || !filter.streamPrefixes.every((p) => typeof p === 'string')) {
    throw new RangeError('filter.streamPrefixes must be an array of strings');
  }
}


/** Where appends are committed: on the calling thread, or on a commit thread (threadedCommitter.ts). */
type Committer = Pick<GroupCommitter, 'enqueue' | 'enqueueChain'> & { close(): Promise<void> };

function onThisThread(committer: GroupCommitter): Committer {
  return {
    enqueue: (append) => committer.enqueue(append),
    enqueueChain: (first, then) => committer.enqueueChain(first, then),
    close: async () => committer.flush(true),
  };
}

class SqliteEventStore implements EventStore {
  /** One writer holds the file's write lock per commit, so the chain can run along the whole log. */
  readonly chainScope = 'log' as const;
  /** A group commits in one transaction (a savepoint within the group commit). */
  readonly atomicGroups = true;
  readonly commitsOnOwnThread: boolean;
  private closed = false;
  private readonly log: EventLog;
  private readonly watcher: LogWatcher;
  private readonly committer: Committer;
  private readonly subscriptions = new Set<CatchUpSubscription>();
  private readonly groups = new Map<string, PersistentGroup>();
  private groupTables: GroupTables | undefined;
  /** Commits of this file by other threads of the process wake our subscribers at once. */
  private readonly commits: FileSignal;

  /** Chain checks running on threads of their own (chainOnThread.ts), ended by close. */
  private readonly chainThreads = new Set<Worker>();

  constructor(
    private readonly db: Db,
    private readonly path: string,
    commitThread: URL | null,
  ) {
    this.log = new EventLog(db);
    this.watcher = new LogWatcher(() => this.log.headSeq());
    this.commits = fileSignal('log', path, () => this.watcher.changed());
    const committed = (head: number) => {
      this.watcher.advance(head);
      this.commits.changed();
    };
    this.commitsOnOwnThread = commitThread !== null;
    this.committer = commitThread ? new ThreadedCommitter(path, committed, commitThread) : onThisThread(new GroupCommitter(db, this.log, committed));
  }

  async append(stream: string, events: NewEvent[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    this.assertOpen();
    validateAppend(stream, events, options.expectedRevision);
    return this.committer.enqueue({ stream, events, expectedRevision: options.expectedRevision });
  }

  async appendThen(first: AppendGroup, then: AppendGroup[]): Promise<ChainResult> {
    this.assertOpen();
    const groups = [first, ...then].map(asGroup);
    for (const append of groups.flat()) validateAppend(append.stream, append.events, append.expectedRevision);
    return this.committer.enqueueChain(groups[0]!, groups.slice(1));
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const maxCount = options.maxCount ?? -1;
    if (options.maxCount !== undefined) validateCount('maxCount', maxCount, 0);
    if (options.fromRevision !== undefined) validateCount('fromRevision', options.fromRevision, 0);
    return this.log.readStream(stream, options.direction === 'backwards', maxCount, options.fromRevision, isClaimStream(stream));
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    validateFilter(options.filter);
    validateCount('maxCount', options.maxCount, 1);
    const from = options.from === 'start' ? 0 : positionToSeq(options.from);
    return this.log.readAfter(from, options.filter, options.maxCount).entries.map((entry) => entry.event);
  }

  async readStreams(options: ReadStreamsOptions): Promise<StreamsPage> {
    this.assertOpen();
    validateCount('maxCount', options.maxCount, 1);
    if (typeof options.prefix !== 'string') throw new RangeError('prefix must be a string');
    if (options.from !== 'start' && !/^[=>]/.test(options.from)) throw new RangeError(`not a streams cursor: ${options.from}`);
    // The cursor names the stream to start at ('=') or the one to start after ('>').
    const [from, after] = options.from === 'start' ? [options.prefix, false] : [options.from.slice(1), options.from.startsWith('>')];
    const events = this.log.streamRange(from, after, prefixEnd(options.prefix), options.maxCount);
    const streams: StreamEvent[][] = [];
    for (const event of events) {
      const current = streams.at(-1);
      if (current?.[0]!.stream === event.stream) current.push(event);
      else streams.push([event]);
    }
    if (events.length < options.maxCount) return { streams, next: null };
    // The page's last stream may go on past it: it starts the next page, unless it is the only
    // one, which then comes whole.
    const last = streams.pop()!;
    const name = last[0]!.stream;
    if (streams.length > 0) return { streams, next: `=${name}` };
    // (A name followed by U+0000 is the least name above it.)
    return { streams: [this.log.streamRange(name, false, `${name}\u0000`, -1)], next: `>${name}` };
  }

  async checkChain(options: CheckChainOptions): Promise<ChainReport> {
    this.assertOpen();
    const until = options.until === null ? 0 : positionToSeq(options.until);
    if (until > 0 && chainThreadFits(this.path)) return checkChainOnThread({ path: this.path, until }, options.progress, this.chainThreads);
    return checkStoredChain(this.log, until, async (events) => {
      options.progress?.(events);
      // Other work of this thread (the read model check beside it) takes its turn between pages.
      await new Promise((resolve) => setImmediate(resolve));
    });
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
    validateGroupName(group);
    const bufferSize = options.bufferSize ?? DEFAULT_BUFFER_SIZE;
    validateCount('bufferSize', bufferSize, 1);
    return (this.groups.get(group) ?? this.createGroup(group, options)).attach(bufferSize);
  }

  async ensurePersistentGroup(group: string, options: PersistentSubscriptionOptions = {}): Promise<void> {
    this.assertOpen();
    validateGroupName(group);
    validateFilter(options.filter);
    this.tables().ensure(group);
  }

  async replayParked(group: string): Promise<number> {
    this.assertOpen();
    this.groups.get(group)?.persist();
    const count = this.tables().requestReplay(group);
    // Served here: at once; served by another process: at its next look (groupTables.ts).
    this.groups.get(group)?.takeReplays();
    return count;
  }

  async rewriteUnchained(stream: string, rewrite: (event: RecordedEvent) => Record<string, unknown> | null): Promise<number> {
    this.assertOpen();
    const events = await this.readStream(stream);
    const update = this.db.prepare<[string, string]>("UPDATE events SET data = ? WHERE id = ? AND json_extract(metadata, '$.hash') IS NULL");
    return this.db
      .transaction(() => {
        let count = 0;
        for (const event of events) {
          if (hashOf(event.metadata) !== null) continue;
          const data = rewrite(event);
          if (data !== null) count += update.run(JSON.stringify(data), event.id).changes;
        }
        this.log.forgetPages();
        return count;
      })
      .immediate();
  }

  async groupCheckpoint(group: string): Promise<{ position: Position | null } | null> {
    this.assertOpen();
    // The group served in this process saves first: its checkpoint may be in memory only for a moment.
    this.groups.get(group)?.persist();
    const seq = this.tables().checkpointOf(group);
    if (seq === undefined) return null;
    return { position: seq === 0 ? null : formatPosition(BigInt(seq)) };
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
    await this.committer.close();
    for (const subscription of [...this.subscriptions]) await subscription.close();
    for (const group of this.groups.values()) group.stop();
    this.watcher.stop();
    this.commits.close();
    await Promise.all([...this.chainThreads].map((thread) => thread.terminate()));
    this.db.close();
  }

  private createGroup(name: string, options: PersistentSubscriptionOptions): PersistentGroup {
    const maxRetryCount = options.maxRetryCount ?? DEFAULT_MAX_RETRY_COUNT;
    validateCount('maxRetryCount', maxRetryCount, 0);
    validateFilter(options.filter);
    const group = new PersistentGroup(
      name,
      { filter: options.filter, maxRetryCount, retryBackoff: options.retryBackoff ?? DEFAULT_RETRY_BACKOFF },
      this.tables(),
      this.log,
      this.watcher,
    );
    this.groups.set(name, group);
    return group;
  }

  /** The persistent groups' tables, opened on first use. */
  private tables(): GroupTables {
    return (this.groupTables ??= new GroupTables(this.db));
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the event store is closed');
  }
}

import type { Position } from './position.js';

/**
 * The event log port, modelled on EventStoreDB so that its production adapter stays thin.
 * Every adapter passes test/contract/eventstore.contract.ts.
 */

/** Who or what caused an event; history shows it as e.g. "via API · <key name>". */
export interface Actor {
  /** Events written before 'user' existed say 'cli' for the operator running `csr`; readers map it (queries/eventView.ts). */
  type: 'apiKey' | 'user' | 'system';
  id: string;
  name: string;
}

export type EventSource = 'app' | 'import' | 'api' | 'automation' | 'health score';

export interface EventMetadata {
  source: EventSource;
  actor: Actor;
  /** Shared by every event of one action (one API request, one CLI command, one import batch). */
  actionId: string;
  correlationId: string;
  causationId: string;
  /** Per object key: how many records this action changed (drives bulk webhook events). */
  actionCounts?: Record<string, number>;
  /** The audit hash chain (src/eventstore/chain.ts): set by the store when it appends; absent on events written before the chain. */
  hash?: string;
}

export interface NewEvent {
  /** Event id (uuid); the same id reaches every webhook receiving this change. */
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

export interface RecordedEvent {
  id: string;
  type: string;
  stream: string;
  /** 0-based revision of the event in its stream. */
  revision: number;
  position: Position;
  /** The log's commit time (millisecond precision). `occurredAt` of webhooks comes from here. */
  created: Date;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

/**
 * An event as `readStreams` gives it: without its metadata, which verification's fold does not
 * read (the chain check covers it), and which the embedded store then neither copies nor parses.
 */
export type StreamEvent = Omit<RecordedEvent, 'metadata'>;

/** 'no_stream': the stream must not exist; a number: the revision of the stream's last event. */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

export interface AppendResult {
  /** Position of the last appended event. */
  position: Position;
  /** Revision of the last appended event (the expected revision of the next append). */
  nextRevision: number;
}

/**
 * Claim streams: the reservations of unique values and the auto-number counters
 * (commands/reservations, commands/autoNumbers). Only writers read them, each by its name, for its
 * last event; no follower needs them. A store with multi-stream transactions (the embedded one,
 * PostgreSQL) keeps them in a table of its own beside the log, written in the same transaction as
 * the log's events: they have no position in the log (readAll, subscriptions, readStreams and the
 * audit chain do not see them; their events' position is the log's start), and a create writes one
 * event to the log instead of four. EventStoreDB keeps them as streams of $all, which followers filter out.
 */
export const CLAIM_STREAM_PREFIXES = ['reservation-', 'autonumber-'] as const;

export function isClaimStream(stream: string): boolean {
  return stream.startsWith(CLAIM_STREAM_PREFIXES[0]) || stream.startsWith(CLAIM_STREAM_PREFIXES[1]);
}

/** One append of `appendThen`. */
export interface StreamAppend {
  stream: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
}

/**
 * One append, or several written together: all or none on a store with multi-stream transactions
 * (the embedded one). EventStoreDB 24 has none: it writes a group's appends one after another and
 * stops at the first that fails, leaving those before it written. So a group puts its claims
 * (reservations) first and the append they protect last: that one is never written without them.
 */
export type AppendGroup = StreamAppend | StreamAppend[];

export function asGroup(group: AppendGroup): StreamAppend[] {
  return Array.isArray(group) ? group : [group];
}

/**
 * What `appendThen` wrote: the claim's result and, per dependent, its result or error (for a
 * group, the result of its last append).
 */
export interface ChainResult {
  first: AppendResult;
  then: PromiseSettledResult<AppendResult>[];
}

export interface ReadStreamOptions {
  direction?: 'forwards' | 'backwards';
  maxCount?: number;
  /**
   * Start at this revision (included): forwards it reads it and the later ones, backwards it and
   * the earlier ones. Lets a cached state be brought up to date by reading only what came after it.
   */
  fromRevision?: number;
}

export interface EventFilter {
  /** Only events whose stream name starts with one of these prefixes. */
  streamPrefixes: string[];
}

/** How a store chains its events' audit hashes (chain.ts): along the whole log, or per stream. */
export type ChainScope = 'log' | 'stream';

export interface ReadAllOptions {
  /** Events strictly after this position; 'start' for the whole log. */
  from: Position | 'start';
  /** At most this many events (>= 1). */
  maxCount: number;
  filter?: EventFilter;
}

/** Where the audit hash chain first fails (chain.ts). */
export interface ChainBreak {
  position: Position;
  eventId: string;
  stream: string;
  reason: string;
}

/** What `checkChain` found. */
export interface ChainReport {
  /** Events read. */
  events: number;
  chained: number;
  /** Events written before the chain began (not covered). */
  unchained: number;
  /** The hash of the last chained event (the head an auditor keeps); 64 zeros before any. */
  head: string;
  firstBreak: ChainBreak | null;
}

export interface CheckChainOptions {
  /** Check up to this position (included); null: nothing (an empty log). */
  until: Position | null;
  /** Told the number of events checked so far, a page at a time. */
  progress?: (events: number) => void;
}

export interface ReadStreamsOptions {
  /** Streams whose name starts with this. */
  prefix: string;
  /** 'start', or the `next` of the page before. */
  from: string | 'start';
  /** About this many events per page (>= 1): a page ends with the stream that reaches it, and a longer stream comes whole. */
  maxCount: number;
}

export interface StreamsPage {
  /** Whole streams, each its events in revision order (without their metadata). */
  streams: StreamEvent[][];
  /** Where the next page starts (opaque to the caller); null: no more streams. */
  next: string | null;
}

export interface SubscribeToAllOptions {
  /** Deliver events strictly after this position; 'start' for the whole log. */
  from: Position | 'start';
  filter?: EventFilter;
}

/** Catch-up subscription: replays from `from`, then turns live. Ends when closed. */
export interface Subscription extends AsyncIterable<RecordedEvent> {
  close(): Promise<void>;
}

export interface PersistentSubscriptionOptions {
  filter?: EventFilter;
  /** How often an event is retried after nack('retry') before it is parked. */
  maxRetryCount?: number;
  /** Events handed out and not yet acked, at most. */
  bufferSize?: number;
  /** How long a retried event waits before it is handed out again (see retryDelayMs). */
  retryBackoff?: RetryBackoff;
}

/** The wait before the n-th retry: `initialMs` doubled per earlier retry, at most `maxMs`. */
export interface RetryBackoff {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY_BACKOFF: RetryBackoff = { initialMs: 500, maxMs: 30_000 };

/** The wait before handing out again an event nacked with 'retry' after `retryCount` earlier retries. */
export function retryDelayMs(retryCount: number, backoff: RetryBackoff = DEFAULT_RETRY_BACKOFF): number {
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(retryCount, 30));
}

export interface PersistentEvent {
  event: RecordedEvent;
  /** How many times this event was handed out before (0 on first delivery). */
  retryCount: number;
  ack(): Promise<void>;
  /** 'retry' hands the event out again later; 'park' sets it aside for an operator. */
  nack(action: 'retry' | 'park', reason: string): Promise<void>;
}

/**
 * A consumer of a persistent subscription group on $all. Groups are created when missing and
 * then start at the current end of the log (a new group never re-sends history); they remember
 * their checkpoint across restarts and deliver at least once; several consumers of one group
 * compete for its events. A nack('retry') hands the event out again only after retryDelayMs;
 * after maxRetryCount retries it is parked until an operator replays the group's parked events.
 */
export interface PersistentSubscription extends AsyncIterable<PersistentEvent> {
  close(): Promise<void>;
  /** False while the consumer is not joined to its group (a dropped connection being re-made). */
  connected(): boolean;
}

export interface EventStore {
  /**
   * Appends atomically to one stream. Throws `Conflict` (src/core/errors.ts) when the stream is not
   * at `expectedRevision`. Resolves only once the events are durable.
   */
  append(stream: string, events: NewEvent[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;
  /**
   * Appends `first` (a claim, e.g. a block of auto numbers) and, only if it succeeded, each append
   * of `then` on its own, as `append` would (each succeeds or fails alone). When `first` fails
   * nothing is written and the call rejects with its error, so nothing that depends on a claim is
   * ever written without it. The embedded store commits all of them in one transaction (one fsync
   * for a claim and the records numbered from it); EventStoreDB appends `first` before the others.
   * `first` and each dependent may be a group (see AppendGroup): a group fails as a whole with the
   * error of its first failing append.
   */
  appendThen(first: AppendGroup, then: AppendGroup[]): Promise<ChainResult>;
  /** The stream's events ([] when the stream does not exist). */
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /**
   * One page of the log in order, without going live: [] once `from` is the head. Audit export,
   * verification and the as-of reads page through the log with it.
   */
  readAll(options: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * Every stream whose name starts with `prefix`, whole, a page of streams at a time, each exactly
   * once, in an order of the store's choosing (the embedded store by stream name, along its
   * (stream, revision) index; EventStoreDB in the order the streams began in $all), each event
   * without its metadata. Verification folds every record's stream this way, not with one
   * readStream per record.
   */
  readStreams(options: ReadStreamsOptions): Promise<StreamsPage>;
  /** How this store chains its events' hashes: over the whole log, or per stream (chain.ts). */
  readonly chainScope: ChainScope;
  /**
   * Re-checks the audit hash chain (chain.ts) over the log up to `until`, each store its own
   * fastest way (the embedded one hashes the stored text itself, without parsing it). The data
   * checked is as stored (ciphertext for sealed personal values), never a rendered form.
   */
  checkChain(options: CheckChainOptions): Promise<ChainReport>;
  /**
   * Whether a group (AppendGroup) is written all or none, also as `first` of appendThen: true where
   * the store has multi-stream transactions (the embedded one). EventStoreDB writes a group's
   * appends one after another and leaves those before a failing one written: there a caller that
   * must not leave a claim behind (a create losing its match key must not take an auto number)
   * writes it on its own first.
   */
  readonly atomicGroups: boolean;
  /**
   * Whether appends are committed on a thread of this process of their own (the embedded log in
   * an API process), which commits what its callers handed it meanwhile as one group: a caller with
   * many to write (an upsert) hands over larger slices there, since each group has a cost of its
   * own (its transaction and fsync, and a projector batch after it) whatever its size. Where a
   * server commits them, larger slices only queue there, beside the followers it keeps busy.
   */
  readonly commitsOnOwnThread: boolean;
  subscribeToAll(options: SubscribeToAllOptions): Subscription;
  persistentSubscription(group: string, options?: PersistentSubscriptionOptions): PersistentSubscription;
  /**
   * Creates the group, at the current end of the log, when it does not exist yet; an existing
   * group is left as it is. A group starts where it is created, so whoever needs the events from
   * a moment on (the first webhook) creates it then, whenever its consumers first start.
   */
  ensurePersistentGroup(group: string, options?: PersistentSubscriptionOptions): Promise<void>;
  /**
   * Hands the group's parked events out again (an operator's command, from any process) and
   * resolves with how many there were. Replayed events start their retries afresh.
   */
  replayParked(group: string): Promise<number>;
  /**
   * How far a persistent subscription group has settled the log (every event up to `position` is
   * acked, parked or outside its filter; null: nothing yet), read from any process for operators'
   * status; null when there is no such group. It may trail the consumers by the store's
   * checkpoint interval.
   */
  groupCheckpoint(group: string): Promise<{ position: Position | null } | null>;
  /** Position of the newest event in the log (null when empty). */
  headPosition(): Promise<Position | null>;
  /**
   * Replaces the data of the stream's events written before the audit chain (those without a
   * hash, which the chain does not cover) with what `rewrite` answers (null: left as it is), in
   * one transaction; answers how many changed. Chained events are never changed. Used only to
   * encrypt personal values written before encryption existed (docs/privacy.md). A store whose
   * events cannot be edited (EventStoreDB) rejects with ValidationFailed and changes nothing.
   */
  rewriteUnchained(stream: string, rewrite: (event: RecordedEvent) => Record<string, unknown> | null): Promise<number>;
  close(): Promise<void>;
}

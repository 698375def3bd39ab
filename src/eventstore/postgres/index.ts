import { migrate } from '../../postgres/migrate.js';
import type { Pool } from '../../postgres/pool.js';
import { hashOf } from '../chain.js';
import { ChainCheck } from '../chainCheck.js';
import { asGroup, DEFAULT_RETRY_BACKOFF } from '../port.js';
import { validateAppend, validateCount } from '../callChecks.js';
import type {
  AppendGroup,
  AppendResult,
  ChainReport,
  ChainResult,
  CheckChainOptions,
  EventStore,
  ExpectedRevision,
  NewEvent,
  PersistentSubscription,
  PersistentSubscriptionOptions,
  ReadAllOptions,
  ReadStreamOptions,
  ReadStreamsOptions,
  RecordedEvent,
  StreamEvent,
  StreamsPage,
  SubscribeToAllOptions,
  Subscription,
} from '../port.js';
import type { Position } from '../position.js';
import { Appender } from './appender.js';
import { CatchUpSubscription, readAfter, SharedPages } from './catchUp.js';
import { asStoreError } from './errors.js';
import { ensureGroup, GroupConsumer, groupCheckpoint, replayParked } from './groups.js';
import { Notifier } from './notifier.js';
import { positionSeq, rowEvent, rowStreamEvent, seqPosition, validateFilter, type EventRow } from './rows.js';
import { EVENTS_MIGRATION } from './schema.js';
import { StreamReads } from './streamReads.js';

/**
 * The event log on PostgreSQL (docs/design.md, "On PostgreSQL"): one events table whose seq is the
 * global position, assigned under one head-row lock so that followers never skip (appender.ts);
 * followers woken by LISTEN/NOTIFY with a slow poll (notifier.ts); persistent groups as tables
 * served by competing consumers in any process (groups.ts). Groups of appends commit in one
 * transaction (atomicGroups), and the hash chain runs along the whole log as in the embedded store.
 * The schema is created and upgraded when opened.
 */
export interface PostgresEventStoreOptions {
  pool: Pool;
  /** How long a persistent consumer's claim on an event lasts unless renewed (its process died). */
  claimTimeoutMs?: number;
}

const DEFAULT_MAX_RETRY_COUNT = 10;
const DEFAULT_BUFFER_SIZE = 100;
const DEFAULT_CLAIM_MS = 15_000;
const CHAIN_PAGE = 2_000;

export async function openPostgresEventStore(options: PostgresEventStoreOptions): Promise<EventStore> {
  await migrate(options.pool, EVENTS_MIGRATION);
  return new PostgresEventStore(options.pool, options.claimTimeoutMs ?? DEFAULT_CLAIM_MS);
}


function validateGroupName(group: string): void {
  if (typeof group !== 'string' || group.length === 0) throw new RangeError('group name must be a non-empty string');
}

class PostgresEventStore implements EventStore {
  readonly chainScope = 'log' as const;
  readonly atomicGroups = true;
  /** The server commits (appender.ts). */
  readonly commitsOnOwnThread = false;
  private closed = false;
  private readonly appender: Appender;
  private readonly streamReads: StreamReads;
  private readonly notifier: Notifier;
  private readonly pages = new SharedPages();
  private readonly followers = new Set<{ close(): Promise<void> }>();

  constructor(
    private readonly pool: Pool,
    private readonly claimMs: number,
  ) {
    this.notifier = new Notifier(pool);
    this.appender = new Appender(pool, (announcement) => this.notifier.announce(announcement));
    this.streamReads = new StreamReads(pool);
  }

  async append(stream: string, events: NewEvent[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    this.assertOpen();
    validateAppend(stream, events, options.expectedRevision);
    const result = await this.appender.enqueue([[{ stream, events, expectedRevision: options.expectedRevision }]]);
    return result.first;
  }

  async appendThen(first: AppendGroup, then: AppendGroup[]): Promise<ChainResult> {
    this.assertOpen();
    const groups = [first, ...then].map(asGroup);
    for (const append of groups.flat()) validateAppend(append.stream, append.events, append.expectedRevision);
    return this.appender.enqueue(groups);
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    if (options.maxCount !== undefined) validateCount('maxCount', options.maxCount, 0);
    if (options.fromRevision !== undefined) validateCount('fromRevision', options.fromRevision, 0);
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision ?? (backwards ? 2 ** 31 - 1 : 0);
    const rows = await this.run(() => this.streamReads.read(stream, Math.min(from, 2 ** 31 - 1), options.maxCount ?? null, backwards));
    return rows.map(rowEvent);
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    validateFilter(options.filter);
    validateCount('maxCount', options.maxCount, 1);
    const from = options.from === 'start' ? '0' : positionSeq(options.from);
    try {
      return (await readAfter(this.pool, from, options.filter, options.maxCount)).events;
    } catch (error) {
      throw asStoreError(error);
    }
  }

  async readStreams(options: ReadStreamsOptions): Promise<StreamsPage> {
    this.assertOpen();
    validateCount('maxCount', options.maxCount, 1);
    if (typeof options.prefix !== 'string') throw new RangeError('prefix must be a string');
    if (options.from !== 'start' && !/^[=>]/.test(options.from)) throw new RangeError(`not a streams cursor: ${options.from}`);
    // The cursor names the stream to start at ('=') or the one to start after ('>').
    const [from, after] = options.from === 'start' ? [options.prefix, false] : [options.from.slice(1), options.from.startsWith('>')];
    const columns = 'seq, id, stream, revision, type, created_ms, data';
    const result = await this.query<Omit<EventRow, 'metadata'>>(
      `SELECT ${columns} FROM csr_events WHERE stream ^@ $1 AND stream ${after ? '>' : '>='} $2 ORDER BY stream, revision LIMIT $3`,
      [options.prefix, from, options.maxCount],
    );
    const streams: StreamEvent[][] = [];
    for (const event of result.rows.map(rowStreamEvent)) {
      const current = streams.at(-1);
      if (current?.[0]!.stream === event.stream) current.push(event);
      else streams.push([event]);
    }
    if (result.rows.length < options.maxCount) return { streams, next: null };
    // The page's last stream may go on past it: it starts the next page, unless it is the only one, which then comes whole.
    const last = streams.pop()!;
    const name = last[0]!.stream;
    if (streams.length > 0) return { streams, next: `=${name}` };
    const whole = await this.query<Omit<EventRow, 'metadata'>>(`SELECT ${columns} FROM csr_events WHERE stream = $1 ORDER BY revision`, [name]);
    return { streams: [whole.rows.map(rowStreamEvent)], next: `>${name}` };
  }

  /** Hashes the stored text itself (the json columns keep it as written), parsing only what does not match. */
  async checkChain(options: CheckChainOptions): Promise<ChainReport> {
    this.assertOpen();
    const check = new ChainCheck('log');
    if (options.until === null) return check.report(0);
    const until = positionSeq(options.until);
    let events = 0;
    for (let cursor = '0'; ; ) {
      const page = await this.query<{ seq: string; id: string; stream: string; revision: number; type: string; created_ms: string; data: string; metadata: string }>(
        'SELECT seq, id, stream, revision, type, created_ms, data::text AS data, metadata::text AS metadata FROM csr_events WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3',
        [cursor, until, CHAIN_PAGE],
      );
      for (const row of page.rows) {
        const created = Number(row.created_ms);
        if (!check.addStoredText({ ...row, created })) {
          check.add({
            id: row.id,
            type: row.type,
            stream: row.stream,
            revision: row.revision,
            position: seqPosition(row.seq),
            created: new Date(created),
            data: JSON.parse(row.data) as Record<string, unknown>,
            metadata: JSON.parse(row.metadata) as RecordedEvent['metadata'],
          });
        }
      }
      events += page.rows.length;
      options.progress?.(events);
      if (page.rows.length < CHAIN_PAGE) return check.report(events);
      cursor = page.rows.at(-1)!.seq;
    }
  }

  subscribeToAll(options: SubscribeToAllOptions): Subscription {
    this.assertOpen();
    validateFilter(options.filter);
    const from = options.from === 'start' ? '0' : positionSeq(options.from);
    const subscription = new CatchUpSubscription(this.pool, this.pages, this.notifier, from, options.filter, (s) => this.followers.delete(s));
    this.followers.add(subscription);
    return subscription;
  }

  persistentSubscription(group: string, options: PersistentSubscriptionOptions = {}): PersistentSubscription {
    this.assertOpen();
    validateGroupName(group);
    validateFilter(options.filter);
    const bufferSize = options.bufferSize ?? DEFAULT_BUFFER_SIZE;
    validateCount('bufferSize', bufferSize, 1);
    const maxRetryCount = options.maxRetryCount ?? DEFAULT_MAX_RETRY_COUNT;
    validateCount('maxRetryCount', maxRetryCount, 0);
    const consumer = new GroupConsumer(
      this.pool,
      this.notifier,
      group,
      { filter: options.filter, maxRetryCount, retryBackoff: options.retryBackoff ?? DEFAULT_RETRY_BACKOFF, bufferSize, claimMs: this.claimMs },
      (c) => this.followers.delete(c),
    );
    this.followers.add(consumer);
    return consumer;
  }

  async ensurePersistentGroup(group: string, options: PersistentSubscriptionOptions = {}): Promise<void> {
    this.assertOpen();
    validateGroupName(group);
    validateFilter(options.filter);
    await this.run(() => ensureGroup(this.pool, group));
  }

  async replayParked(group: string): Promise<number> {
    this.assertOpen();
    const count = await this.run(() => replayParked(this.pool, group));
    this.notifier.notify();
    return count;
  }

  async groupCheckpoint(group: string): Promise<{ position: Position | null } | null> {
    this.assertOpen();
    return this.run(() => groupCheckpoint(this.pool, group));
  }

  async headPosition(): Promise<Position | null> {
    this.assertOpen();
    const result = await this.query<{ seq: string }>('SELECT seq FROM csr_event_head WHERE one');
    const seq = result.rows[0]?.seq ?? '0';
    return seq === '0' ? null : seqPosition(seq);
  }

  async rewriteUnchained(stream: string, rewrite: (event: RecordedEvent) => Record<string, unknown> | null): Promise<number> {
    this.assertOpen();
    const events = await this.readStream(stream);
    const changes: Array<{ id: string; data: string }> = [];
    for (const event of events) {
      if (hashOf(event.metadata) !== null) continue;
      const data = rewrite(event);
      if (data !== null) changes.push({ id: event.id, data: JSON.stringify(data) });
    }
    if (changes.length === 0) return 0;
    // One statement, one transaction; the hash condition again in SQL: a chained event is never changed.
    const result = await this.query(
      `UPDATE csr_events e SET data = c.data::json FROM unnest($1::text[], $2::text[]) AS c(id, data)
       WHERE e.id = c.id AND e.metadata->>'hash' IS NULL`,
      [changes.map((c) => c.id), changes.map((c) => c.data)],
    );
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Callers of queued appends were promised durability or an error, not silence.
    await this.appender.drain();
    for (const follower of [...this.followers]) await follower.close();
    await this.notifier.close();
  }

  private async query<R extends object>(sql: string, values: unknown[] = []): Promise<{ rows: R[]; rowCount: number | null }> {
    return this.run(() => this.pool.query<R & import('pg').QueryResultRow>(sql, values));
  }

  private async run<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw asStoreError(error);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the event store is closed');
  }
}


import {
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  PersistentSubscriptionDoesNotExistError,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import type {
  AllStreamResolvedEvent,
  Position as EsdbPosition,
  ReadStreamOptions as EsdbReadStreamOptions,
  ResolvedEvent,
} from '@eventstore/db-client';
import { Conflict, ValidationFailed } from '../../core/errors.js';
import { asGroup } from '../port.js';
import type {
  ChainReport,
  CheckChainOptions,
  ReadStreamsOptions,
  StreamsPage,
  AppendGroup,
  AppendResult,
  ChainResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
} from '../port.js';
import { chainForStream, hashOf } from '../chain.js';
import { checkChainByPages } from '../chainCheck.js';
import { appendInOrder } from './appendInOrder.js';
import { streamsByFirstEvent } from './streams.js';
import { readFullPage } from './readPage.js';
import type { Position } from '../position.js';
import {
  describeRevision,
  appendFailure,
  fromEsdbPosition,
  isKnownPosition,
  groupCheckpointFrom,
  toEsdbPosition,
  chainedAppend,
  toEventData,
  toExpectedRevision,
  toRecordedEvent,
} from './mapping.js';
import { subscribeToAll } from './catchUp.js';
import type { EsdbLogger, SubscriptionContext } from './control.js';
import { ensurePersistentGroup, persistentSubscription } from './persistent.js';

/**
 * The production event log: EventStoreDB (or KurrentDB, its successor, which speaks the same gRPC
 * protocol) through `@eventstore/db-client`. The value mapping lives in ./mapping.ts (pure,
 * unit-tested); this module only moves values between the port and the client. The two
 * subscriptions, which keep themselves alive across server restarts, are in ./catchUp.ts and
 * ./persistent.ts. The consumer's own checkpoint decides what happens after *its* restart (at
 * least once).
 */

export interface EventStoreDbOptions {
  /** e.g. `esdb://localhost:2113?tls=false`, or a cluster: `esdb+discover://host:2113`. */
  connectionString: string;
  /** Told about resubscriptions after errors (pino-compatible; optional). */
  logger?: EsdbLogger;
  /** How long a persistent-subscription event may stay un-acked before it is handed out again. */
  messageTimeoutMs?: number;
}

export function openEventStoreDb(options: EventStoreDbOptions): EventStore {
  const client = EventStoreDBClient.connectionString(options.connectionString);
  const logger = options.logger;
  const open = new Set<{ close(): Promise<void> }>();
  let closed = false;

  function assertOpen(): void {
    if (closed) throw new Error('event store is closed');
  }

  /** The stream's events as the server resolves them ([] when the stream does not exist). */
  async function readResolved(stream: string, readOptions: EsdbReadStreamOptions): Promise<ResolvedEvent[]> {
    const resolved: ResolvedEvent[] = [];
    try {
      for await (const event of client.readStream(stream, readOptions) as AsyncIterable<ResolvedEvent>) resolved.push(event);
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return resolved;
  }

  /** The $all position of the event at `revision` of `stream` (null when the server gives none). */
  async function positionOfRevision(stream: string, revision: bigint): Promise<Position | null> {
    const [resolved] = await readResolved(stream, { fromRevision: revision, direction: FORWARDS, maxCount: 1, requiresLeader: true });
    const position = resolved?.event?.position;
    return isKnownPosition(position) ? fromEsdbPosition(position) : null;
  }

  async function append(
    stream: string,
    events: NewEvent[],
    appendOptions: { expectedRevision: ExpectedRevision },
  ): Promise<AppendResult> {
    assertOpen();
    assertSomeEvents(stream, events);
    toExpectedRevision(appendOptions.expectedRevision); // throws RangeError for a negative revision
    try {
      return await appendChained(stream, events, appendOptions);
    } catch (error) {
      // Every call of a write (the reads around it too): a full disk answers 507, a node that is gone 503.
      throw appendFailure(error);
    }
  }

  async function appendChained(stream: string, events: NewEvent[], appendOptions: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    let result;
    for (let attempt = 1; ; attempt++) {
      // The hash chain runs per stream here (chain.ts): the stream's last event gives the previous
      // hash, and the append expects exactly that revision, so two writers cannot fork the chain.
      const [last] = await readResolved(stream, { direction: BACKWARDS, fromRevision: END, maxCount: 1, requiresLeader: true });
      const lastEvent = last?.event;
      const plan = chainedAppend(appendOptions.expectedRevision, lastEvent ? { revision: lastEvent.revision, hash: lastEvent.isJson ? hashOf(lastEvent.metadata as Record<string, unknown>) : null } : null);
      if (plan === 'conflict') throw new Conflict(stream, String(appendOptions.expectedRevision), lastEvent ? String(lastEvent.revision) : 'no_stream');
      try {
        const chained = chainForStream(stream, plan.firstRevision, plan.previous, events);
        result = await client.appendToStream(stream, chained.map(toEventData), { expectedRevision: plan.expectedRevision });
        break;
      } catch (error) {
        if (error instanceof WrongExpectedVersionError) {
          // Someone appended since the read: a caller that expected 'any' loses nothing by a new try.
          if (plan.retryable && attempt < CHAIN_ATTEMPTS) continue;
          throw new Conflict(stream, String(appendOptions.expectedRevision), describeRevision(error.actualVersion));
        }
        throw error;
      }
    }
    // The port promises the position of the *last* appended event, exactly as subscriptions will
    // deliver it: callers wait for projections to pass it (read your writes). The append result's
    // position is the write's commit position, which for a multi-event append is not the last
    // event's (the events share a commit position and differ in their prepare positions), and its
    // spelling has varied between server versions. So the last event is read back by its revision
    // (one indexed read); the append result is only the fallback for servers before 22.6, whose
    // stream reads carry no positions.
    let position = await positionOfRevision(stream, result.nextExpectedRevision);
    if (position === null && events.length === 1 && isKnownPosition(result.position)) position = fromEsdbPosition(result.position);
    if (position === null) throw new Error(`EventStoreDB gave no log position for the append to ${stream}`);
    return { position, nextRevision: Number(result.nextExpectedRevision) };
  }

  /** EventStoreDB 24 has no multi-stream transaction: the appends go one after another (appendInOrder.ts). */
  async function appendThen(first: AppendGroup, then: AppendGroup[]): Promise<ChainResult> {
    const groups = [first, ...then].map(asGroup);
    // Checked before the claim is sent: an append refused for its shape must not leave the claim written.
    for (const part of groups.flat()) {
      assertSomeEvents(part.stream, part.events);
      toExpectedRevision(part.expectedRevision); // throws RangeError for a negative revision
    }
    return appendInOrder((part) => append(part.stream, part.events, { expectedRevision: part.expectedRevision }), groups);
  }

  async function readAll(readOptions: ReadAllOptions): Promise<RecordedEvent[]> {
    assertOpen();
    // A full page or the end of the log (./readPage.ts): a short page means the end, for every caller.
    return readFullPage(
      (from, count) =>
        client.readAll({ direction: FORWARDS, fromPosition: from === 'start' ? START : toEsdbPosition(from), maxCount: count, resolveLinkTos: false }) as AsyncIterable<AllStreamResolvedEvent>,
      readOptions.from,
      readOptions.maxCount,
      readOptions.filter,
    );
  }

  async function readStream(stream: string, readOptions: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    assertOpen();
    if (readOptions.maxCount !== undefined && readOptions.maxCount <= 0) return [];
    const from = readOptions.fromRevision;
    if (from !== undefined && (!Number.isSafeInteger(from) || from < 0)) throw new RangeError(`fromRevision must be an integer >= 0, got ${from}`);
    const backwards = readOptions.direction === 'backwards';
    const resolved = await readResolved(stream, {
      direction: backwards ? BACKWARDS : FORWARDS,
      fromRevision: from !== undefined ? BigInt(from) : backwards ? END : START,
      ...(readOptions.maxCount !== undefined ? { maxCount: readOptions.maxCount } : {}),
    });
    return resolved.map(toRecordedEvent).filter((event): event is RecordedEvent => event !== null);
  }

  async function readStreams(streamsOptions: ReadStreamsOptions): Promise<StreamsPage> {
    assertOpen();
    return streamsByFirstEvent(
      { all: (from, prefix) => readAll({ from, maxCount: PAGE, filter: { streamPrefixes: [prefix] } }), stream: async (name) => (await readStream(name)).map(({ metadata: _metadata, ...event }) => event) },
      streamsOptions,
    );
  }

  async function checkChain(chainOptions: CheckChainOptions): Promise<ChainReport> {
    assertOpen();
    // Parsed by the client: each event is re-serialised (chainCheck.ts), one chain per stream.
    return checkChainByPages('stream', (from) => readAll({ from, maxCount: PAGE }), chainOptions.until, chainOptions.progress);
  }

  async function replayParked(group: string): Promise<number> {
    assertOpen();
    const info = await client.getPersistentSubscriptionToAllInfo(group);
    const parked = Number(info.stats.parkedMessageCount);
    if (parked > 0) await client.replayParkedMessagesToAll(group);
    return parked;
  }

  async function groupCheckpoint(group: string): Promise<{ position: Position | null } | null> {
    assertOpen();
    try {
      return groupCheckpointFrom((await client.getPersistentSubscriptionToAllInfo(group)).stats);
    } catch (error) {
      if (error instanceof PersistentSubscriptionDoesNotExistError) return null;
      throw error;
    }
  }

  async function headPosition(): Promise<Position | null> {
    assertOpen();
    // The newest event that a subscription would deliver: system events ($-streams, $-types such
    // as persistent subscription checkpoints) are skipped, page by page, backwards from the end.
    const pageSize = 100;
    let from: EsdbPosition | typeof END = END;
    for (;;) {
      const read = client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: pageSize, resolveLinkTos: false });
      let count = 0;
      let oldest: EsdbPosition | undefined;
      for await (const resolved of read as AsyncIterable<AllStreamResolvedEvent>) {
        count += 1;
        const event = toRecordedEvent(resolved);
        if (event !== null) {
          await read.cancel().catch(() => undefined);
          return event.position;
        }
        oldest = resolved.event?.position ?? oldest;
      }
      if (count < pageSize || oldest === undefined) return null;
      if (from !== END && oldest.commit === from.commit && oldest.prepare === from.prepare) return null;
      from = oldest;
    }
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    await Promise.allSettled([...open].map((subscription) => subscription.close()));
    await client.dispose();
  }

  async function rewriteUnchained(): Promise<number> {
    throw new ValidationFailed('EventStoreDB cannot edit a stored event: values written there before encryption cannot be re-encrypted (docs/privacy.md)');
  }

  const context: SubscriptionContext = { client, logger, open, assertOpen, messageTimeoutMs: options.messageTimeoutMs };
  return {
    chainScope: 'stream',
    atomicGroups: false,
    commitsOnOwnThread: false,
    append,
    appendThen,
    readAll,
    readStream,
    readStreams,
    checkChain,
    subscribeToAll: (subscribeOptions) => subscribeToAll(context, subscribeOptions),
    persistentSubscription: (group, subscribeOptions) => persistentSubscription(context, group, subscribeOptions),
    ensurePersistentGroup: (group, groupOptions) => ensurePersistentGroup(context, group, groupOptions),
    replayParked,
    groupCheckpoint,
    headPosition,
    rewriteUnchained,
    close,
  };
}

/** Events per $all page of readStreams and checkChain. */
const PAGE = 1000;

/** How often an append expecting 'any' is tried again when another writer extends the stream's chain first. */
const CHAIN_ATTEMPTS = 5;

function assertSomeEvents(stream: string, events: NewEvent[]): void {
  if (events.length === 0) throw new RangeError(`append to ${stream} needs at least one event`);
}

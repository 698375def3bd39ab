import {
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  PARK,
  PersistentSubscriptionDoesNotExistError,
  PersistentSubscriptionExistsError,
  RETRY,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import type {
  AllStreamResolvedEvent,
  AllStreamSubscription,
  PersistentSubscriptionToAll,
  PersistentSubscriptionToAllResolvedEvent,
  Position as EsdbPosition,
  ReadStreamOptions as EsdbReadStreamOptions,
  ResolvedEvent,
} from '@eventstore/db-client';
import { Conflict, InsufficientStorage, ValidationFailed } from '../../core/errors.js';
import { asGroup } from '../port.js';
import type {
  AppendGroup,
  AppendResult,
  ChainResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  PersistentEvent,
  PersistentSubscription,
  PersistentSubscriptionOptions,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeToAllOptions,
  Subscription,
} from '../port.js';
import { chainForStream, hashOf } from '../chain.js';
import { DEFAULT_RETRY_BACKOFF, retryDelayMs } from '../port.js';
import type { Position } from '../position.js';
import {
  PERSISTENT_DEFAULTS,
  backoffDelay,
  classifySubscriptionError,
  describeRevision,
  isServerDiskFull,
  fromEsdbPosition,
  isAfter,
  isKnownPosition,
  matchesFilter,
  persistentGroupSettings,
  groupCheckpointFrom,
  inFlightLimit,
  nackBackoff,
  toEsdbPosition,
  chainedAppend,
  toEventData,
  toExpectedRevision,
  toRecordedEvent,
  toServerFilter,
} from './mapping.js';

/**
 * The production event log: EventStoreDB (or KurrentDB, its successor, which speaks the same gRPC
 * protocol) through `@eventstore/db-client`. The value mapping lives in ./eventstoredbMapping.ts
 * (pure, unit-tested); this module only moves values between the port and the client, and keeps
 * subscriptions alive across server restarts.
 *
 * Delivery guarantees:
 * - `subscribeToAll` remembers the position of the last event it handed out. When the call fails
 *   because the server went away (restart, leader change, network), it resubscribes from that
 *   position after a backoff, so nothing is skipped and nothing already handed out is repeated.
 *   The consumer's own checkpoint still decides what happens after *its* restart (at least once).
 * - `persistentSubscription` rejoins the group after such failures; events that were handed out and
 *   not acked before the failure are handed out again by the server (at least once). Acks and nacks
 *   for events of a connection that has dropped are ignored: the server redelivers those events.
 */

export interface EventStoreDbOptions {
  /** e.g. `esdb://localhost:2113?tls=false`, or a cluster: `esdb+discover://host:2113`. */
  connectionString: string;
  /** Told about resubscriptions after errors (pino-compatible; optional). */
  logger?: { warn(details: object, message: string): void; error(details: object, message: string): void };
  /** How long a persistent-subscription event may stay un-acked before it is handed out again. */
  messageTimeoutMs?: number;
}

/** Milliseconds to wait for an ack/nack write before giving up on it (the server redelivers). */
const SETTLE_TIMEOUT_MS = 10_000;

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
        if (isServerDiskFull(error)) throw new InsufficientStorage();
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

  /**
   * EventStoreDB 24 has no multi-stream transaction: the claim is acknowledged before the rest is
   * sent, and a group's appends are sent one after another, stopping at the first that fails.
   */
  async function appendThen(first: AppendGroup, then: AppendGroup[]): Promise<ChainResult> {
    const groups = [first, ...then].map(asGroup);
    // Checked before the claim is sent: an append refused for its shape must not leave the claim written.
    for (const part of groups.flat()) {
      assertSomeEvents(part.stream, part.events);
      toExpectedRevision(part.expectedRevision); // throws RangeError for a negative revision
    }
    const inOrder = async (group: StreamAppend[]): Promise<AppendResult> => {
      let last!: AppendResult;
      for (const part of group) last = await append(part.stream, part.events, { expectedRevision: part.expectedRevision });
      return last;
    };
    const claimed = await inOrder(groups[0]!);
    const written = await Promise.allSettled(groups.slice(1).map(inOrder));
    return { first: claimed, then: written };
  }

  async function readAll(readOptions: ReadAllOptions): Promise<RecordedEvent[]> {
    assertOpen();
    if (!Number.isSafeInteger(readOptions.maxCount) || readOptions.maxCount < 1) throw new RangeError('maxCount must be an integer >= 1');
    // The server's fromPosition is inclusive and its pages hold system events too: read on until
    // something of ours after `from` turns up or the log ends.
    let from: Position | 'start' = readOptions.from;
    for (;;) {
      const page: RecordedEvent[] = [];
      let count = 0;
      let lastSeen: Position | null = null;
      const read = client.readAll({
        direction: FORWARDS,
        fromPosition: from === 'start' ? START : toEsdbPosition(from),
        maxCount: readOptions.maxCount + 1,
        resolveLinkTos: false,
      });
      for await (const resolved of read as AsyncIterable<AllStreamResolvedEvent>) {
        count += 1;
        const position = resolved.event?.position;
        if (isKnownPosition(position)) lastSeen = fromEsdbPosition(position);
        const event = toRecordedEvent(resolved);
        if (event === null || !isAfter(event.position, from) || !matchesFilter(event, readOptions.filter)) continue;
        page.push(event);
        if (page.length === readOptions.maxCount) break;
      }
      if (page.length > 0 || count < readOptions.maxCount + 1 || lastSeen === null || lastSeen === from) return page;
      from = lastSeen;
    }
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

  function subscribeToAll(subscribeOptions: SubscribeToAllOptions): Subscription {
    assertOpen();
    const serverFilter = toServerFilter(subscribeOptions.filter);
    const control = new Control();
    let last: Position | 'start' = subscribeOptions.from;
    let current: AllStreamSubscription | null = null;

    async function* events(): AsyncGenerator<RecordedEvent> {
      let attempt = 0;
      try {
        while (!control.closed) {
          const sub = client.subscribeToAll({
            fromPosition: last === 'start' ? START : toEsdbPosition(last),
            resolveLinkTos: false,
            filter: serverFilter,
          });
          current = sub;
          try {
            for await (const resolved of sub as AsyncIterable<AllStreamResolvedEvent>) {
              attempt = 0;
              // Checkpoint-only items, system events and events outside the filter carry nothing for us.
              const event = toRecordedEvent(resolved);
              if (event === null || !matchesFilter(event, subscribeOptions.filter) || !isAfter(event.position, last)) continue;
              last = event.position;
              yield event;
              if (control.closed) return;
            }
            if (control.closed) return;
            logger?.warn({ from: last }, 'EventStoreDB subscription ended by the server; resubscribing');
          } catch (error) {
            if (control.closed) return;
            if (classifySubscriptionError(error) !== 'transient') throw error;
            logger?.warn({ err: error, from: last, attempt }, 'EventStoreDB subscription dropped; resubscribing');
          } finally {
            current = null;
            await release(sub);
          }
          await control.sleep(backoffDelay(attempt++));
        }
      } finally {
        control.closed = true;
        open.delete(handle);
      }
    }

    const handle = {
      async close(): Promise<void> {
        control.close();
        open.delete(handle);
        if (current) await release(current);
      },
    };
    open.add(handle);
    const iterator = events();
    return { [Symbol.asyncIterator]: () => iterator, close: handle.close };
  }

  function persistentSubscription(group: string, subscribeOptions: PersistentSubscriptionOptions = {}): PersistentSubscription {
    assertOpen();
    const messageTimeoutMs = options.messageTimeoutMs ?? PERSISTENT_DEFAULTS.messageTimeoutMs;
    const requested = subscribeOptions.bufferSize ?? PERSISTENT_DEFAULTS.bufferSize;
    const settings = persistentGroupSettings({
      ...(subscribeOptions.maxRetryCount !== undefined ? { maxRetryCount: subscribeOptions.maxRetryCount } : {}),
      messageTimeoutMs,
      bufferSize: requested,
    });
    const serverFilter = toServerFilter(subscribeOptions.filter);
    const bufferSize = inFlightLimit(requested, messageTimeoutMs);
    const backoff = nackBackoff(subscribeOptions.retryBackoff ?? DEFAULT_RETRY_BACKOFF, messageTimeoutMs);
    let live = false;
    const control = new Control();
    let current: { sub: PersistentSubscriptionToAll; connection: Connection } | null = null;

    /**
     * Creates the group, or brings an existing one's settings in line with this code's (retries,
     * timeout, buffers): a group is never left with the settings of an older release. The server
     * cannot change a group's filter; this adapter filters again on its side (matchesFilter).
     */
    async function ensureGroup(): Promise<void> {
      try {
        await client.createPersistentSubscriptionToAll(group, settings, { filter: serverFilter });
      } catch (error) {
        if (!(error instanceof PersistentSubscriptionExistsError)) throw error;
        await client.updatePersistentSubscriptionToAll(group, settings);
      }
    }

    async function* events(): AsyncGenerator<PersistentEvent> {
      let attempt = 0;
      let groupReady = false;
      try {
        while (!control.closed) {
          if (!groupReady) {
            try {
              await ensureGroup();
              groupReady = true;
            } catch (error) {
              if (control.closed) return;
              if (classifySubscriptionError(error) !== 'transient') throw error;
              logger?.warn({ err: error, group, attempt }, 'EventStoreDB persistent subscription group not created yet; retrying');
              await control.sleep(backoffDelay(attempt++));
              continue;
            }
          }
          const sub = client.subscribeToPersistentSubscriptionToAll(group, { bufferSize });
          sub.on('confirmation', () => (live = true));
          const connection: Connection = { alive: true, pending: new Set() };
          current = { sub, connection };
          try {
            for await (const resolved of sub as AsyncIterable<PersistentSubscriptionToAllResolvedEvent>) {
              attempt = 0;
              const event = toRecordedEvent(resolved);
              if (event === null || !matchesFilter(event, subscribeOptions.filter)) {
                await settle(connection, () => sub.ack(resolved));
                continue;
              }
              yield {
                event,
                retryCount: resolved.retryCount,
                ack: () => settle(connection, () => sub.ack(resolved)),
                nack: async (action, reason) => {
                  // The server would hand a retried event out again at once: wait first, longer each time.
                  if (action === 'retry') await control.sleepFor(retryDelayMs(resolved.retryCount, backoff));
                  await settle(connection, () => sub.nack(action === 'park' ? PARK : RETRY, reason, resolved));
                },
              };
              if (control.closed) return;
            }
            if (control.closed) return;
            logger?.error({ group }, 'EventStoreDB persistent subscription ended by the server; rejoining');
          } catch (error) {
            connection.alive = false; // acks can no longer reach the server: it redelivers instead
            if (control.closed) return;
            const kind = classifySubscriptionError(error);
            if (kind === 'fatal') throw error;
            if (kind === 'group-missing') groupReady = false;
            logger?.error({ err: error, group, attempt }, 'EventStoreDB persistent subscription dropped; rejoining');
          } finally {
            live = false;
            current = null;
            if (connection.alive) await drain(connection);
            connection.alive = false;
            await release(sub);
          }
          await control.sleep(backoffDelay(attempt++));
        }
      } finally {
        control.closed = true;
        open.delete(handle);
      }
    }

    const handle = {
      async close(): Promise<void> {
        control.close();
        open.delete(handle);
        const closing = current;
        if (!closing) return;
        // Let acks already given reach the server before the call is cancelled, so that the group
        // does not hand those events out again.
        await drain(closing.connection);
        closing.connection.alive = false;
        await release(closing.sub);
      },
    };
    open.add(handle);
    const iterator = events();
    return { [Symbol.asyncIterator]: () => iterator, close: handle.close, connected: () => live && !control.closed };
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

  return { chainScope: 'stream', atomicGroups: false, append, appendThen, readAll, readStream, subscribeToAll, persistentSubscription, replayParked, groupCheckpoint, headPosition, rewriteUnchained, close };
}

/** How often an append expecting 'any' is tried again when another writer extends the stream's chain first. */
const CHAIN_ATTEMPTS = 5;

function assertSomeEvents(stream: string, events: NewEvent[]): void {
  if (events.length === 0) throw new RangeError(`append to ${stream} needs at least one event`);
}

/** Close flag plus an interruptible backoff sleep for one subscription. */
class Control {
  closed = false;
  private readonly waits = new Set<() => void>();
  private wake: (() => void) | null = null;

  sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }

  close(): void {
    this.closed = true;
    this.wake?.();
    for (const done of [...this.waits]) done();
  }

  /** A wait of its own (beside the reconnect sleep), cut short when the subscription closes. */
  sleepFor(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waits.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waits.add(done);
    });
  }
}

/** Cancels the gRPC call behind a client subscription and destroys its stream (ends any pending read). */
async function release(sub: AllStreamSubscription | PersistentSubscriptionToAll): Promise<void> {
  try {
    await sub.unsubscribe();
  } catch {
    // The call is already gone.
  }
  if (!sub.destroyed) sub.destroy();
}

/** One call of a persistent subscription: whether it still carries acks, and the acks under way. */
interface Connection {
  alive: boolean;
  pending: Set<Promise<void>>;
}

/** Time for acks written to the call to leave the process before the call is cancelled. */
const DRAIN_GRACE_MS = 50;

async function drain(connection: Connection): Promise<void> {
  await Promise.allSettled([...connection.pending]);
  await new Promise((resolve) => setTimeout(resolve, DRAIN_GRACE_MS));
}

/**
 * Acks/nacks through the connection that delivered the event. When that connection has dropped,
 * the ack cannot reach the server and the server hands the event out again: resolve quietly.
 */
async function settle(connection: Connection, write: () => Promise<void>): Promise<void> {
  if (!connection.alive) return;
  let timer: NodeJS.Timeout | undefined;
  const writing = Promise.race([
    write(),
    new Promise<void>((_, reject) => {
      timer = setTimeout(() => reject(new Error('EventStoreDB did not take the ack in time')), SETTLE_TIMEOUT_MS);
    }),
  ]);
  connection.pending.add(writing);
  try {
    await writing;
  } catch (error) {
    if (!connection.alive) return;
    throw error;
  } finally {
    clearTimeout(timer);
    connection.pending.delete(writing);
  }
}

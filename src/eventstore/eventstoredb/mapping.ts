import {
  ANY,
  NO_STREAM,
  END,
  ROUND_ROBIN,
  STREAM_EXISTS,
  excludeSystemEvents,
  persistentSubscriptionToAllSettingsFromDefaults,
  streamNameFilter,
} from '@eventstore/db-client';
import type {
  AllStreamResolvedEvent,
  AppendExpectedRevision,
  Filter,
  JSONEventData,
  PersistentSubscriptionToAllSettings,
  Position as EsdbPosition,
  ResolvedEvent,
} from '@eventstore/db-client';
import type { EventFilter, EventMetadata, ExpectedRevision, NewEvent, RecordedEvent, RetryBackoff } from '../port.js';
import { GENESIS } from '../chain.js';
import { InsufficientStorage, Unavailable } from '../../core/errors.js';
import { formatPosition, parsePosition, type Position } from '../position.js';

/**
 * The pure half of the EventStoreDB adapter (src/eventstore/eventstoredb.ts): port values <->
 * client values. Nothing here talks to a server, so all of it is unit-tested everywhere
 * (test/unit/eventstoredbMapping.test.ts). Only constants and pure helpers of the client are used.
 */

/** 2^64 - 1: what servers before 22.6 put into positions of events read from a stream. */
const UNKNOWN_POSITION = 18_446_744_073_709_551_615n;

// ---------------------------------------------------------------------------------------------
// Append

export function toExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      if (!Number.isSafeInteger(expected) || expected < 0) {
        throw new RangeError(`expected revision must be a non-negative integer, got ${expected}`);
      }
      return BigInt(expected);
  }
}

/** A revision as reported by the client (bigint or one of its constants) in a Conflict message. */
export function describeRevision(revision: bigint | number | string | undefined): string {
  if (revision === undefined) return 'unknown';
  return String(revision);
}

/**
 * The per-stream hash chain's append (chain.ts) given the stream's last event as read just
 * before: the revision the append must expect (always exact, so the chain cannot fork), the
 * previous hash, and whether a conflict may be retried (only when the caller expected 'any' or
 * 'stream_exists'); 'conflict' when the caller's expectation already fails.
 */
export function chainedAppend(
  expected: ExpectedRevision,
  last: { revision: bigint | number; hash: string | null } | null,
): 'conflict' | { expectedRevision: AppendExpectedRevision; firstRevision: number; previous: string; retryable: boolean } {
  const lastRevision = last === null ? null : Number(last.revision);
  if (expected === 'no_stream' && lastRevision !== null) return 'conflict';
  if (expected === 'stream_exists' && lastRevision === null) return 'conflict';
  if (typeof expected === 'number' && expected !== lastRevision) return 'conflict';
  return {
    expectedRevision: lastRevision === null ? NO_STREAM : BigInt(lastRevision),
    firstRevision: lastRevision === null ? 0 : lastRevision + 1,
    previous: last?.hash ?? GENESIS,
    retryable: expected === 'any' || expected === 'stream_exists',
  };
}

export function toEventData(event: NewEvent): JSONEventData {
  return {
    id: event.id,
    contentType: 'application/json',
    type: event.type,
    data: event.data,
    metadata: event.metadata as unknown as Record<string, unknown>,
  } as JSONEventData;
}

// ---------------------------------------------------------------------------------------------
// Positions

export function fromEsdbPosition(position: EsdbPosition): Position {
  return formatPosition(position.commit, position.prepare);
}

export function toEsdbPosition(position: Position): EsdbPosition {
  return parsePosition(position);
}

/** A group's last checkpoint as the port gives it (`groupCheckpoint`): null position before its first. */
export function groupCheckpointFrom(stats: { lastCheckpointedEventPosition?: EsdbPosition | undefined }): { position: Position | null } {
  const position = stats.lastCheckpointedEventPosition;
  return { position: isKnownPosition(position) ? fromEsdbPosition(position) : null };
}

/** True when the client gave a real log position (not absent, not the "unknown" marker). */
export function isKnownPosition(position: EsdbPosition | undefined): position is EsdbPosition {
  return position !== undefined && position.commit !== UNKNOWN_POSITION && position.prepare !== UNKNOWN_POSITION;
}

// ---------------------------------------------------------------------------------------------
// Recorded events

const TICKS_PER_MS = 10_000n;
/** Numbers above this are .NET ticks (100 ns) since the Unix epoch, not milliseconds. */
const TICKS_THRESHOLD = 100_000_000_000_000; // ~1e14: year 5138 in ms, 1970-04-27 in ticks

/**
 * The recorded event's `created` as a Date with millisecond precision. Client v6 already gives a
 * Date (it converts the server's ticks, truncating to ms); older or other clients gave ticks as a
 * number/bigint/string. Everything is truncated to whole milliseconds.
 */
export function toCreated(created: Date | number | bigint | string): Date {
  if (created instanceof Date) {
    const ms = created.getTime();
    if (Number.isNaN(ms)) throw new RangeError('invalid created date');
    return new Date(Math.floor(ms));
  }
  if (typeof created === 'string') {
    if (/^\d+$/.test(created)) return toCreated(BigInt(created));
    const parsed = new Date(created);
    if (Number.isNaN(parsed.getTime())) throw new RangeError(`invalid created value: ${created}`);
    return toCreated(parsed);
  }
  if (typeof created === 'bigint') {
    if (created > BigInt(TICKS_THRESHOLD)) return new Date(Number(created / TICKS_PER_MS));
    return new Date(Number(created));
  }
  if (!Number.isFinite(created)) throw new RangeError(`invalid created value: ${created}`);
  if (created > TICKS_THRESHOLD) return new Date(Math.floor(created / 10_000));
  return new Date(Math.floor(created));
}

export function isSystemStream(stream: string): boolean {
  return stream.startsWith('$');
}

export function isSystemEventType(type: string): boolean {
  return type.startsWith('$');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/**
 * ResolvedEvent (from readStream, readAll, subscribeToAll or a persistent subscription) ->
 * RecordedEvent, or null for items that are not ours to deliver: no event (checkpoint-only or
 * unresolved link), system streams and system event types, and events whose data or metadata is
 * not a JSON object (binary events written by other applications).
 */
export function toRecordedEvent(resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent | null {
  const event = resolved.event;
  if (!event) return null;
  if (isSystemStream(event.streamId) || isSystemEventType(event.type)) return null;
  if (!event.isJson || !isPlainObject(event.data) || !isPlainObject(event.metadata)) return null;
  let position: Position;
  if (isKnownPosition(event.position)) {
    position = fromEsdbPosition(event.position);
  } else if (resolved.commitPosition !== undefined && resolved.commitPosition !== UNKNOWN_POSITION) {
    // Servers before 22.6 only give the commit position (single-event appends: commit = prepare).
    position = formatPosition(resolved.commitPosition, resolved.commitPosition);
  } else {
    throw new Error(
      `event ${event.id} in ${event.streamId} came without a log position (EventStoreDB 22.6 or later is required)`,
    );
  }
  return {
    id: event.id,
    type: event.type,
    stream: event.streamId,
    revision: Number(event.revision),
    position,
    created: toCreated(event.created),
    data: event.data,
    metadata: event.metadata as unknown as EventMetadata,
  };
}

/** Client-side check of the port's filter (the server filters too; this keeps the contract exact). */
export function matchesFilter(event: { stream: string }, filter: EventFilter | undefined): boolean {
  if (!filter) return true;
  return filter.streamPrefixes.some((prefix) => event.stream.startsWith(prefix));
}

/** Strictly after `from` (subscriptions never hand out the event at their start position). */
export function isAfter(position: Position, from: Position | 'start' | null): boolean {
  return from === null || from === 'start' || position > from;
}

// ---------------------------------------------------------------------------------------------
// Filters and persistent subscription settings

/**
 * The server-side filter for a catch-up or persistent subscription. Prefixes select streams; without
 * them, system events are excluded. An empty prefix list is sent as "exclude system events" and the
 * adapter then drops everything client-side (matchesFilter), since the server has no "match nothing".
 */
export function toServerFilter(filter: EventFilter | undefined, checkpointInterval = 1): Filter {
  const prefixes = filter?.streamPrefixes.filter((prefix) => prefix.length > 0) ?? [];
  if (filter && prefixes.length > 0 && !prefixes.some(isSystemStream)) {
    return streamNameFilter({ prefixes, checkpointInterval });
  }
  return excludeSystemEvents({ checkpointInterval });
}

export interface PersistentGroupSettingsOptions {
  /** Retries (nack 'retry' or message timeouts) before the server parks an event. */
  maxRetryCount?: number;
  /** Milliseconds an event may stay un-acked before the server hands it out again. */
  messageTimeoutMs?: number;
}

/** Events held un-acked by one consumer, at most, whatever it asks for. */
export const MAX_IN_FLIGHT = 200;
/** What settling one held event may cost a consumer (the fan-out renders and stores it), at worst. */
const SETTLE_BUDGET_PER_EVENT_MS = 50;

/**
 * How many events a consumer may hold: all of them must be settled within half the message
 * timeout, or the server hands them out again while they are still being handled. This is the
 * consumer's own `bufferSize` (the subscribe call's), not a setting of the group.
 */
export function inFlightLimit(requested: number, messageTimeoutMs: number): number {
  const withinTimeout = Math.max(1, Math.floor(messageTimeoutMs / 2 / SETTLE_BUDGET_PER_EVENT_MS));
  return Math.max(1, Math.min(requested, MAX_IN_FLIGHT, withinTimeout));
}

/**
 * The adapter waits before sending a retry nack (the server would hand the event out again at
 * once); the event is held meanwhile, so the wait stays under half the message timeout.
 */
export function nackBackoff(backoff: RetryBackoff, messageTimeoutMs: number): RetryBackoff {
  const cap = Math.floor(messageTimeoutMs / 2);
  return { initialMs: Math.min(backoff.initialMs, cap), maxMs: Math.min(backoff.maxMs, cap) };
}

export const PERSISTENT_DEFAULTS = {
  maxRetryCount: 10,
  messageTimeoutMs: 60_000,
  /** Write the group's checkpoint at most this often (ms)... */
  checkPointAfterMs: 1_000,
  /** ...once at least this many events were acked... */
  checkPointLowerBound: 1,
  /** ...and at the latest after this many acked events. */
  checkPointUpperBound: 100,
  /** What a consumer asks to hold when it does not say (see inFlightLimit). */
  bufferSize: 10,
} as const;

/**
 * The group's own read-ahead on the server: fixed, whoever creates the group (the API creating the
 * first webhook, or a dispatcher), so that both make the same settings and a consumer's start never
 * has to update the group. The server refuses a group whose read batch is not smaller than its
 * buffers (PersistentSubscription's constructor in EventStoreDB: "ReadBatchSize may not be greater
 * than or equal to BufferSize"), answering Fail; these are the server's documented defaults
 * (readBatchSize 20, historyBufferSize 500, liveBufferSize 500), which keep to that rule.
 */
export const GROUP_BUFFERS = { readBatchSize: 20, historyBufferSize: 500, liveBufferSize: 500 } as const;

/**
 * Explicit settings for the group on $all: a new group starts at the end of the log (it must not
 * send history; the port's ensurePersistentGroup), no link resolution, round-robin between
 * competing consumers, bounded retries then parking, and frequent checkpoints so that a server
 * restart redelivers few events. startFrom applies only when the group is created: an existing
 * group's start is never changed by this adapter (groupUpdate).
 */
export function persistentGroupSettings(options: PersistentGroupSettingsOptions = {}): PersistentSubscriptionToAllSettings {
  const maxRetryCount = options.maxRetryCount ?? PERSISTENT_DEFAULTS.maxRetryCount;
  if (!Number.isSafeInteger(maxRetryCount) || maxRetryCount < 0) {
    throw new RangeError(`maxRetryCount must be a non-negative integer, got ${maxRetryCount}`);
  }
  const messageTimeout = options.messageTimeoutMs ?? PERSISTENT_DEFAULTS.messageTimeoutMs;
  return persistentSubscriptionToAllSettingsFromDefaults({
    startFrom: END,
    ...GROUP_BUFFERS,
    resolveLinkTos: false,
    extraStatistics: false,
    maxRetryCount,
    messageTimeout,
    checkPointAfter: PERSISTENT_DEFAULTS.checkPointAfterMs,
    checkPointLowerBound: PERSISTENT_DEFAULTS.checkPointLowerBound,
    checkPointUpperBound: PERSISTENT_DEFAULTS.checkPointUpperBound,
    consumerStrategyName: ROUND_ROBIN,
  });
}

/** The settings an update would change; startFrom is not among them (an existing group keeps its start). */
const UPDATABLE = [
  'resolveLinkTos',
  'extraStatistics',
  'messageTimeout',
  'maxRetryCount',
  'checkPointAfter',
  'checkPointLowerBound',
  'checkPointUpperBound',
  'maxSubscriberCount',
  'liveBufferSize',
  'readBatchSize',
  'historyBufferSize',
  'consumerStrategyName',
] as const satisfies readonly (keyof PersistentSubscriptionToAllSettings)[];

/**
 * What a consumer does with a group that exists, given the group as the server describes it
 * (getPersistentSubscriptionToAllInfo): nothing when its settings are this code's ('keep'); else
 * an update carrying the group's own start point, never this code's END. Any update makes the
 * server rebuild the group and drop its consumers; the rebuilt group resumes from its checkpoint,
 * or, without one, from its start point, which for a group made at END is the end of the log *at
 * the rebuild*: events written since the group was made would be skipped. So a group that started
 * at END and has no checkpoint yet is not updated ('deferred'); the next start, after its first
 * checkpoint, updates it.
 */
export function groupUpdate(
  current: { settings: PersistentSubscriptionToAllSettings; stats: { lastCheckpointedEventPosition?: EsdbPosition | undefined } },
  wanted: PersistentSubscriptionToAllSettings,
): 'keep' | 'deferred' | { settings: PersistentSubscriptionToAllSettings; changed: string[] } {
  const changed = UPDATABLE.filter((key) => current.settings[key] !== wanted[key]);
  if (changed.length === 0) return 'keep';
  // undefined: a start the client could not read back; sending anything else would move it.
  const startFrom = current.settings.startFrom as PersistentSubscriptionToAllSettings['startFrom'] | undefined;
  if (startFrom === undefined) return 'deferred';
  if (startFrom === END && !isKnownPosition(current.stats.lastCheckpointedEventPosition)) return 'deferred';
  return { settings: { ...wanted, startFrom }, changed };
}

// ---------------------------------------------------------------------------------------------
// Errors and reconnection

/** Client error types (`error.type`) after which a subscription is re-established. */
const TRANSIENT_TYPES = new Set([
  'timeout',
  'deadline-exceeded',
  'unavailable',
  'cancelled',
  'unknown',
  'not-leader',
  'persistent-subscription-dropped',
  'persistent-subscription-failed',
  'maximum-subscribers-reached',
]);

/** Node network error codes seen while a server restarts. */
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** gRPC status codes: CANCELLED 1, UNKNOWN 2, DEADLINE_EXCEEDED 4, ABORTED 10, INTERNAL 13, UNAVAILABLE 14. */
const TRANSIENT_GRPC = new Set([1, 2, 4, 10, 13, 14]);

export type SubscriptionErrorKind = 'transient' | 'group-missing' | 'fatal';

/** What a subscription does after an error: resubscribe, recreate the group first, or give up. */
export function classifySubscriptionError(error: unknown): SubscriptionErrorKind {
  if (typeof error !== 'object' || error === null) return 'fatal';
  const { type, code } = error as { type?: unknown; code?: unknown };
  if (type === 'persistent-subscription-does-not-exist') return 'group-missing';
  if (typeof type === 'string') return TRANSIENT_TYPES.has(type) ? 'transient' : 'fatal';
  if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return 'transient';
  if (typeof code === 'number' && TRANSIENT_GRPC.has(code)) return 'transient';
  return 'fatal';
}

/**
 * The server refused to create or update a group (its answer Fail: settings it does not accept,
 * an unknown consumer strategy, a start position past the end; or the credentials may not manage
 * groups). Trying again sends the same request and gets the same answer: permanent, reported once
 * with the server's reason, never retried by the adapter.
 */
export class GroupSettingsRefused extends Error {
  constructor(group: string, readonly reason: string) {
    super(`EventStoreDB refused the persistent subscription group "${group}": ${reason} (a fault in this release's group settings, or credentials without the right to manage groups; not retried)`);
    this.name = 'GroupSettingsRefused';
  }
}

/** Creating or updating a group: refused for good, or what a subscription would do after the error. */
export function classifyGroupCommandError(error: unknown): SubscriptionErrorKind | 'refused' {
  if (typeof error === 'object' && error !== null) {
    const { type } = error as { type?: unknown };
    // The server answers a refused create/update with PersistentSubscriptionFailed (the client's
    // 'persistent-subscription-failed', carrying the reason); a malformed request with InvalidArgument.
    if (type === 'persistent-subscription-failed' || type === 'invalid-argument' || type === 'access-denied') return 'refused';
  }
  return classifySubscriptionError(error);
}

/** The server's reason for a refusal, as the client carries it (PersistentSubscriptionFailedError.reason), else its message. */
export function refusalReason(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const { reason, message } = error as { reason?: unknown; message?: unknown };
  if (typeof reason === 'string' && reason !== '') return reason;
  return typeof message === 'string' ? message : String(error);
}

/** Exponential backoff for resubscribing: 100 ms doubling up to 5 s, with up to 20% jitter. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(100 * 2 ** Math.max(0, attempt), 5_000);
  return Math.round(base * (1 + 0.2 * random()));
}

// ---------------------------------------------------------------------------------------------
// Full disk

/**
 * What the server says when its disk is full. The client has no error type for it. EventStoreDB
 * 24.10's writer fails with an IOException ("No space left on device" on Linux, "There is not
 * enough space on the disk" on Windows); StorageWriterService then logs "Unexpected error in
 * StorageWriterService" and stops the node (Application.Exit). That text reaches the client only
 * when the server still answers (an error of type 'unknown' carrying it); mostly the client sees
 * the node go away instead: 'unavailable', or a 'timeout' for a write the stopped writer never
 * committed (see appendFailure).
 */
const SERVER_DISK_FULL = /no space left on device|not enough space on the disk|ENOSPC|disk (is )?full|out of disk space/i;

/** True for an append error that says the server's disk is full. */
export function isServerDiskFull(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { type, message, details } = error as { type?: unknown; message?: unknown; details?: unknown };
  // A wrong expected version or a refused argument is never about space, whatever a stream name says.
  if (type === 'wrong-expected-version' || type === 'invalid-argument' || type === 'stream-deleted') return false;
  return [message, details].some((text) => typeof text === 'string' && SERVER_DISK_FULL.test(text));
}

/** Client error types for a node that did not answer the write: stopped (a full disk stops it), restarting, or failing over. */
const NODE_GONE = new Set(['unavailable', 'timeout', 'deadline-exceeded', 'not-leader', 'cancelled']);

export const EVENT_LOG_UNREACHABLE = 'the event log did not answer; the change may not have been saved. Retry shortly (a retry with the same Idempotency-Key is applied once)';

/**
 * What an append's failure means to the API: a full disk is InsufficientStorage (507) as on the
 * other stores; a node that did not answer is Unavailable (503), since a node that stopped on a
 * full disk looks exactly like that from here; anything else is passed on as it is.
 */
export function appendFailure(error: unknown): unknown {
  if (isServerDiskFull(error)) return new InsufficientStorage();
  if (typeof error === 'object' && error !== null) {
    const { type, code } = error as { type?: unknown; code?: unknown };
    if (typeof type === 'string' && NODE_GONE.has(type)) return new Unavailable(EVENT_LOG_UNREACHABLE);
    if (type === undefined && typeof code === 'string' && TRANSIENT_CODES.has(code)) return new Unavailable(EVENT_LOG_UNREACHABLE);
  }
  return error;
}

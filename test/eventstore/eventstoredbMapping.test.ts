import type { AllStreamResolvedEvent, ResolvedEvent } from '@eventstore/db-client';
import { convertToCommandError } from '@eventstore/db-client';
import { Conflict, InsufficientStorage, Unavailable } from '../../src/core/errors.js';
import { describe, expect, it } from 'vitest';
import {
  groupCheckpointFrom,
  PERSISTENT_DEFAULTS,
  backoffDelay,
  classifySubscriptionError,
  describeRevision,
  fromEsdbPosition,
  isAfter,
  isServerDiskFull,
  appendFailure,
  EVENT_LOG_UNREACHABLE,
  isKnownPosition,
  matchesFilter,
  persistentGroupSettings,
  inFlightLimit,
  MAX_IN_FLIGHT,
  nackBackoff,
  toCreated,
  toEsdbPosition,
  toEventData,
  toExpectedRevision,
  toRecordedEvent,
  toServerFilter,
} from '../../src/eventstore/eventstoredb/mapping.js';
import type { EventMetadata, NewEvent } from '../../src/eventstore/port.js';
import { formatPosition } from '../../src/eventstore/position.js';

const metadata: EventMetadata = {
  source: 'api',
  actor: { type: 'apiKey', id: 'k1', name: 'Zapier' },
  actionId: 'a1',
  correlationId: 'c1',
  causationId: 'c1',
};

function resolved(overrides: Record<string, unknown> = {}, commitPosition?: bigint): AllStreamResolvedEvent {
  return {
    event: {
      streamId: 'record-1',
      id: '5d3c3ae5-4f6d-4a3b-9a5c-1c2d3e4f5a6b',
      isJson: true,
      revision: 3n,
      type: 'RecordCreated',
      created: new Date('2025-03-04T05:06:07.890Z'),
      data: { workspaceId: 'w1', object: 'clients', fields: { name: 'Acme' } },
      metadata,
      position: { commit: 1234n, prepare: 1200n },
      ...overrides,
    },
    ...(commitPosition !== undefined ? { commitPosition } : {}),
  } as unknown as AllStreamResolvedEvent;
}

describe('expected revision', () => {
  it('maps the port values to the client constants and numbers to bigint', () => {
    expect(toExpectedRevision('any')).toBe('any');
    expect(toExpectedRevision('no_stream')).toBe('no_stream');
    expect(toExpectedRevision('stream_exists')).toBe('stream_exists');
    expect(toExpectedRevision(0)).toBe(0n);
    expect(toExpectedRevision(41)).toBe(41n);
  });

  it('rejects revisions that are not non-negative integers', () => {
    expect(() => toExpectedRevision(-1)).toThrow(RangeError);
    expect(() => toExpectedRevision(1.5)).toThrow(RangeError);
    expect(() => toExpectedRevision(Number.NaN)).toThrow(RangeError);
  });

  it('describes the actual revision of a WrongExpectedVersionError', () => {
    expect(describeRevision(7n)).toBe('7');
    expect(describeRevision('no_stream')).toBe('no_stream');
    expect(describeRevision(undefined)).toBe('unknown');
  });
});

describe('new events', () => {
  it('become JSON event data with the same id, type, data and metadata', () => {
    const event: NewEvent = { id: 'e1', type: 'RecordCreated', data: { a: 1 }, metadata };
    expect(toEventData(event)).toEqual({
      id: 'e1',
      contentType: 'application/json',
      type: 'RecordCreated',
      data: { a: 1 },
      metadata,
    });
  });
});

describe('positions', () => {
  it('round-trip between the client pair and the fixed-width string', () => {
    const position = fromEsdbPosition({ commit: 1234n, prepare: 1200n });
    expect(position).toBe(formatPosition(1234n, 1200n));
    expect(toEsdbPosition(position)).toEqual({ commit: 1234n, prepare: 1200n });
  });

  it('order like the log: commit first, then prepare (events of one multi-event append)', () => {
    const a = fromEsdbPosition({ commit: 900n, prepare: 900n });
    const b = fromEsdbPosition({ commit: 900n, prepare: 1010n });
    const c = fromEsdbPosition({ commit: 10_000n, prepare: 10_000n });
    expect([c, b, a].sort()).toEqual([a, b, c]);
  });

  it('treats the 2^64-1 marker of old servers as unknown', () => {
    expect(isKnownPosition(undefined)).toBe(false);
    expect(isKnownPosition({ commit: 18_446_744_073_709_551_615n, prepare: 18_446_744_073_709_551_615n })).toBe(false);
    expect(isKnownPosition({ commit: 0n, prepare: 0n })).toBe(true);
  });

  it('isAfter is strict and everything is after the start', () => {
    const p = formatPosition(5n, 5n);
    expect(isAfter(p, 'start')).toBe(true);
    expect(isAfter(p, null)).toBe(true);
    expect(isAfter(p, p)).toBe(false);
    expect(isAfter(p, formatPosition(4n, 4n))).toBe(true);
    expect(isAfter(p, formatPosition(5n, 6n))).toBe(false);
  });
});

describe('group checkpoints', () => {
  it('maps the last checkpointed position, and none (absent or the unknown marker) to null', () => {
    expect(groupCheckpointFrom({ lastCheckpointedEventPosition: { commit: 42n, prepare: 40n } })).toEqual({ position: formatPosition(42n, 40n) });
    expect(groupCheckpointFrom({})).toEqual({ position: null });
    expect(groupCheckpointFrom({ lastCheckpointedEventPosition: { commit: 18446744073709551615n, prepare: 18446744073709551615n } })).toEqual({ position: null });
  });
});

describe('created', () => {
  it('client v6 gives a Date: kept, at millisecond precision', () => {
    const created = toCreated(new Date('2025-03-04T05:06:07.890Z'));
    expect(created).toBeInstanceOf(Date);
    expect(created.toISOString()).toBe('2025-03-04T05:06:07.890Z');
  });

  it('ticks (100 ns since the Unix epoch, as the server sends them) become milliseconds, truncated', () => {
    const ms = Date.parse('2025-03-04T05:06:07.890Z');
    const ticks = BigInt(ms) * 10_000n + 9_999n;
    expect(toCreated(ticks).toISOString()).toBe('2025-03-04T05:06:07.890Z');
    expect(toCreated(ticks.toString()).toISOString()).toBe('2025-03-04T05:06:07.890Z');
    expect(toCreated(Number(BigInt(ms) * 10_000n)).toISOString()).toBe('2025-03-04T05:06:07.890Z');
  });

  it('plain milliseconds stay milliseconds', () => {
    const ms = Date.parse('2025-03-04T05:06:07.890Z');
    expect(toCreated(ms).toISOString()).toBe('2025-03-04T05:06:07.890Z');
    expect(toCreated(BigInt(ms)).toISOString()).toBe('2025-03-04T05:06:07.890Z');
  });

  it('rejects invalid values', () => {
    expect(() => toCreated(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => toCreated('yesterday')).toThrow(RangeError);
    expect(() => toCreated(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe('recorded events', () => {
  it('maps every field of a resolved event', () => {
    const event = toRecordedEvent(resolved());
    expect(event).toEqual({
      id: '5d3c3ae5-4f6d-4a3b-9a5c-1c2d3e4f5a6b',
      type: 'RecordCreated',
      stream: 'record-1',
      revision: 3,
      position: formatPosition(1234n, 1200n),
      created: new Date('2025-03-04T05:06:07.890Z'),
      data: { workspaceId: 'w1', object: 'clients', fields: { name: 'Acme' } },
      metadata,
    });
    expect(typeof event?.revision).toBe('number');
  });

  it('skips checkpoint-only items and unresolved links', () => {
    expect(toRecordedEvent({ commitPosition: 10n } as ResolvedEvent)).toBeNull();
    expect(toRecordedEvent({} as ResolvedEvent)).toBeNull();
  });

  it('skips system streams and system event types', () => {
    expect(toRecordedEvent(resolved({ streamId: '$settings' }))).toBeNull();
    expect(toRecordedEvent(resolved({ streamId: '$persistentsubscription-$all::webhooks-checkpoint' }))).toBeNull();
    expect(toRecordedEvent(resolved({ type: '$metadata' }))).toBeNull();
    expect(toRecordedEvent(resolved({ type: '$>' }))).toBeNull();
  });

  it('skips binary events and events whose data or metadata is not a JSON object', () => {
    expect(toRecordedEvent(resolved({ isJson: false, data: new Uint8Array([1]) }))).toBeNull();
    expect(toRecordedEvent(resolved({ data: 'text' }))).toBeNull();
    expect(toRecordedEvent(resolved({ data: [1, 2] }))).toBeNull();
    expect(toRecordedEvent(resolved({ metadata: undefined }))).toBeNull();
    expect(toRecordedEvent(resolved({ metadata: new Uint8Array([1]) }))).toBeNull();
  });

  it('falls back to the commit position when the server gives no event position', () => {
    const event = toRecordedEvent(resolved({ position: undefined }, 777n));
    expect(event?.position).toBe(formatPosition(777n, 777n));
    const marker = 18_446_744_073_709_551_615n;
    const old = toRecordedEvent(resolved({ position: { commit: marker, prepare: marker } }, 778n));
    expect(old?.position).toBe(formatPosition(778n, 778n));
  });

  it('refuses an event without any position', () => {
    expect(() => toRecordedEvent(resolved({ position: undefined }))).toThrow(/log position/);
  });
});

describe('filters', () => {
  it('prefixes become a server-side stream name filter', () => {
    const filter = toServerFilter({ streamPrefixes: ['record-', 'setup-'] });
    expect(filter).toMatchObject({ filterOn: 'streamName', prefixes: ['record-', 'setup-'] });
    expect(filter.checkpointInterval).toBeGreaterThan(0);
  });

  it('no filter (or nothing usable) excludes system events on the server', () => {
    for (const filter of [undefined, { streamPrefixes: [] }, { streamPrefixes: [''] }, { streamPrefixes: ['$all'] }]) {
      expect(toServerFilter(filter)).toMatchObject({ filterOn: 'eventType', regex: '^[^$].*' });
    }
  });

  it('client-side check matches the port semantics exactly', () => {
    expect(matchesFilter({ stream: 'record-1' }, undefined)).toBe(true);
    expect(matchesFilter({ stream: 'record-1' }, { streamPrefixes: ['record-'] })).toBe(true);
    expect(matchesFilter({ stream: 'setup-1' }, { streamPrefixes: ['record-'] })).toBe(false);
    expect(matchesFilter({ stream: 'record-1' }, { streamPrefixes: [] })).toBe(false);
  });
});

describe('persistent subscription settings', () => {
  it('are explicit: a new group starts at the end of the log, no links, round robin, bounded retries, frequent checkpoints', () => {
    const settings = persistentGroupSettings();
    expect(settings).toMatchObject({
      startFrom: 'end',
      resolveLinkTos: false,
      extraStatistics: false,
      maxRetryCount: PERSISTENT_DEFAULTS.maxRetryCount,
      messageTimeout: PERSISTENT_DEFAULTS.messageTimeoutMs,
      checkPointAfter: 1_000,
      checkPointLowerBound: 1,
      checkPointUpperBound: 100,
      consumerStrategyName: 'RoundRobin',
    });
    expect(settings.checkPointLowerBound).toBeLessThanOrEqual(settings.checkPointUpperBound);
  });

  it('take the retry count and message timeout from the caller', () => {
    expect(persistentGroupSettings({ maxRetryCount: 3, messageTimeoutMs: 5_000 })).toMatchObject({
      maxRetryCount: 3,
      messageTimeout: 5_000,
    });
    expect(persistentGroupSettings({ maxRetryCount: 0 }).maxRetryCount).toBe(0);
    expect(() => persistentGroupSettings({ maxRetryCount: -1 })).toThrow(RangeError);
  });
});

describe('in-flight events and retry waits stay within the message timeout', () => {
  it('bounds the buffer so that what is held can be settled before the server times it out', () => {
    expect(inFlightLimit(1_000, 60_000)).toBe(MAX_IN_FLIGHT);
    expect(inFlightLimit(10, 60_000)).toBe(10);
    expect(inFlightLimit(1_000, 5_000)).toBeLessThan(MAX_IN_FLIGHT);
    expect(inFlightLimit(1_000, 100)).toBe(1);
  });

  it('caps the wait before a retry nack below the message timeout', () => {
    expect(nackBackoff({ initialMs: 500, maxMs: 120_000 }, 60_000)).toEqual({ initialMs: 500, maxMs: 30_000 });
    expect(nackBackoff({ initialMs: 500, maxMs: 10_000 }, 60_000)).toEqual({ initialMs: 500, maxMs: 10_000 });
    expect(nackBackoff({ initialMs: 5_000, maxMs: 10_000 }, 4_000)).toEqual({ initialMs: 2_000, maxMs: 2_000 });
  });
});

describe('subscription errors', () => {
  it('resubscribes after errors of a restarting or unreachable server', () => {
    for (const type of ['unavailable', 'cancelled', 'deadline-exceeded', 'unknown', 'not-leader', 'persistent-subscription-dropped']) {
      expect(classifySubscriptionError({ type })).toBe('transient');
    }
    expect(classifySubscriptionError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('transient');
    expect(classifySubscriptionError(Object.assign(new Error('rst'), { code: 13 }))).toBe('transient');
    expect(classifySubscriptionError(Object.assign(new Error('unavailable'), { code: 14 }))).toBe('transient');
  });

  it('recreates a deleted group', () => {
    expect(classifySubscriptionError({ type: 'persistent-subscription-does-not-exist' })).toBe('group-missing');
  });

  it('gives up on errors that retrying cannot fix', () => {
    expect(classifySubscriptionError({ type: 'access-denied' })).toBe('fatal');
    expect(classifySubscriptionError({ type: 'invalid-argument' })).toBe('fatal');
    expect(classifySubscriptionError(new Error('bug'))).toBe('fatal');
    expect(classifySubscriptionError('text')).toBe('fatal');
    expect(classifySubscriptionError(null)).toBe('fatal');
  });

  it('backs off exponentially up to 5 s with bounded jitter', () => {
    expect(backoffDelay(0, () => 0)).toBe(100);
    expect(backoffDelay(1, () => 0)).toBe(200);
    expect(backoffDelay(3, () => 0)).toBe(800);
    expect(backoffDelay(20, () => 0)).toBe(5_000);
    expect(backoffDelay(20, () => 1)).toBe(6_000);
    expect(backoffDelay(-3, () => 0)).toBe(100);
  });
});

describe('a full disk on the server', () => {
  // Given an append error as the client reports it, when it is classified, then only the
  // server's out-of-space failures say "disk full" (the adapter answers InsufficientStorage, 507).
  const table: [string, unknown, boolean][] = [
    ['an unknown error carrying the Linux IOException', { type: 'unknown', message: '2 UNKNOWN: System.IO.IOException: No space left on device' }, true],
    ['an unknown error carrying the Windows IOException', { type: 'unknown', message: 'Exception was thrown by handler.', details: 'There is not enough space on the disk.' }, true],
    ['ENOSPC in the details', { type: 'unknown', message: 'write failed', details: 'ENOSPC' }, true],
    ['a wrong expected version whose stream name says disk full', { type: 'wrong-expected-version', message: 'stream disk-full-notes at 3' }, false],
    ['an unavailable node (stopped, or restarting)', { type: 'unavailable', message: '14 UNAVAILABLE: No connection established' }, false],
    ['a deadline exceeded', { type: 'deadline-exceeded', message: '4 DEADLINE_EXCEEDED' }, false],
    ['an unknown error about something else', { type: 'unknown', message: 'Object reference not set to an instance of an object' }, false],
    ['no error object', 'No space left on device', false],
    ['null', null, false],
  ];
  it.each(table)('%s', (_given, error, full) => {
    expect(isServerDiskFull(error)).toBe(full);
  });
});

describe("an append's failure as the API answers it", () => {
  /** The client's own error for a gRPC status, as it converts what the server (or the channel) gives. */
  const grpc = (code: number, details: string) => convertToCommandError(Object.assign(new Error(`${code} ${details}`), { code, details }));

  it('a full disk is 507, whatever call carried it', () => {
    expect(appendFailure(grpc(2, 'Unexpected error in StorageWriterService: No space left on device'))).toBeInstanceOf(InsufficientStorage);
    expect((appendFailure(grpc(2, 'There is not enough space on the disk.')) as InsufficientStorage).status).toBe(507);
  });

  it('a node that does not answer (stopped by a full disk, restarting, failing over) is 503, not a bare 500', () => {
    // UNAVAILABLE 14, ABORTED 10 (the client's TimeoutError: the server's Prepare/CommitTimeout), DEADLINE_EXCEEDED 4.
    for (const error of [grpc(14, 'No connection established'), grpc(10, 'Prepare phase timeout'), grpc(4, 'Deadline exceeded')]) {
      const mapped = appendFailure(error);
      expect(mapped).toBeInstanceOf(Unavailable);
      expect((mapped as Unavailable).status).toBe(503);
      expect((mapped as Error).message).toBe(EVENT_LOG_UNREACHABLE);
    }
    expect(appendFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBeInstanceOf(Unavailable);
  });

  it('anything else is passed on as it is', () => {
    const conflict = new Conflict('record-1', '3', '4');
    expect(appendFailure(conflict)).toBe(conflict);
    const other = grpc(2, 'Object reference not set to an instance of an object');
    expect(appendFailure(other)).toBe(other);
    const bug = new TypeError('x is undefined');
    expect(appendFailure(bug)).toBe(bug);
  });
});

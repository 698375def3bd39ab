import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { afterAttempt, autoSwitchOffReason, bulkChunksDue, recordChange, wants } from '../../src/webhooks/policy.js';
import type { BulkGroup, Webhook } from '../../src/webhooks/port.js';

const MINUTE = 60_000;
const SCHEDULE = [1, 5, 30, 120, 720].map((minutes) => minutes * MINUTE);
const t0 = new Date('2026-01-01T00:00:00.000Z');
const SENT = { sentAt: '2025-12-31T23:59:59.900Z', signature: 'sha256=' + 'd'.repeat(64) };

describe('afterAttempt: the delivery state machine of spec 3.2', () => {
  const failure = { ok: false as const, status: 500, error: 'receiver answered 500' };

  it.each([
    [0, '2026-01-01T00:01:00.000Z'],
    [1, '2026-01-01T00:05:00.000Z'],
    [2, '2026-01-01T00:30:00.000Z'],
    [3, '2026-01-01T02:00:00.000Z'],
    [4, '2026-01-01T12:00:00.000Z'],
  ])('after %i earlier attempts a failure waits for the next delay of 1m, 5m, 30m, 2h, 12h', (attempts, next) => {
    expect(afterAttempt({ id: 1, webhookId: 'w', attempts }, failure, t0, SCHEDULE, SENT)).toEqual({
      deliveryId: 1,
      webhookId: 'w',
      succeeded: false,
      status: 'retrying',
      attempts: attempts + 1,
      responseCode: 500,
      error: 'receiver answered 500',
      lastAttemptAt: t0.toISOString(),
      nextAttemptAt: next,
      sentAt: SENT.sentAt,
      signature: SENT.signature,
    });
  });

  it('the 6th failed attempt makes the delivery failed, with no next attempt', () => {
    expect(afterAttempt({ id: 1, webhookId: 'w', attempts: 5 }, { ok: false, status: null, error: 'no answer within 10000 ms' }, t0, SCHEDULE, SENT)).toMatchObject({
      status: 'failed',
      attempts: 6,
      responseCode: null,
      error: 'no answer within 10000 ms',
      nextAttemptAt: null,
    });
  });

  it('any 2xx is delivered, at any attempt', () => {
    expect(afterAttempt({ id: 1, webhookId: 'w', attempts: 3 }, { ok: true, status: 202 }, t0, SCHEDULE, SENT)).toMatchObject({
      succeeded: true,
      status: 'delivered',
      attempts: 4,
      responseCode: 202,
      error: null,
      nextAttemptAt: null,
    });
  });
});

function webhook(overrides: Partial<Webhook> = {}): Webhook {
  return {
    id: 'w',
    workspaceId: 'ws',
    name: 'CRM',
    url: 'https://hooks.example.com/',
    events: 'all',
    objects: 'all',
    enabled: true,
    disabledReason: null,
    secret: 's',
    createdAt: '2025-12-01T00:00:00.000Z',
    consecutiveFailures: 0,
    lastSuccessAt: null,
    ...overrides,
  };
}

describe('autoSwitchOffReason: at least 20 failed attempts in a row and no success for 24 h', () => {
  const now = new Date('2026-01-02T00:00:00.000Z');
  it.each([
    ['19 failures, no success for days', { consecutiveFailures: 19 }, false],
    ['20 failures, no success for 24 h', { consecutiveFailures: 20, lastSuccessAt: '2026-01-01T00:00:00.000Z' }, true],
    ['20 failures, a success 23 h 59 min ago', { consecutiveFailures: 20, lastSuccessAt: '2026-01-01T00:01:00.000Z' }, false],
    ['20 failures, never a success, created 24 h ago', { consecutiveFailures: 20, createdAt: '2026-01-01T00:00:00.000Z' }, true],
    ['500 failures, never a success, created 1 h ago', { consecutiveFailures: 500, createdAt: '2026-01-01T23:00:00.000Z' }, false],
    ['already off', { consecutiveFailures: 50, enabled: false }, false],
  ])('%s', (_case, overrides, off) => {
    const reason = autoSwitchOffReason(webhook(overrides), now);
    if (off) expect(reason).toMatch(/switched off automatically: \d+ failed attempts in a row/);
    else expect(reason).toBeNull();
  });
});

describe('wants: enabled, object and event kind', () => {
  it.each([
    [{}, 'clients', 'created', true],
    [{ enabled: false }, 'clients', 'created', false],
    [{ objects: ['billing'] }, 'clients', 'created', false],
    [{ objects: ['billing', 'clients'] }, 'clients', 'updated', true],
    [{ events: ['deleted'] }, 'clients', 'updated', false],
    [{ events: ['deleted'] }, 'clients', 'deleted', true],
  ] as const)('%j %s.%s -> %s', (overrides, object, kind, expected) => {
    expect(wants(webhook(overrides as Partial<Webhook>), object, kind)).toBe(expected);
  });
});

describe('recordChange', () => {
  const event = (type: string, data: Record<string, unknown>, actionCounts?: Record<string, number>): RecordedEvent => ({
    id: randomUUID(),
    type,
    stream: 'record-r1',
    revision: 1,
    position: `${'1'.padStart(20, '0')}:${'1'.padStart(20, '0')}`,
    created: t0,
    data: { schemaVersion: 1, workspaceId: 'ws', object: 'clients', recordId: 'r1', ...data },
    metadata: { source: 'api', actor: { type: 'apiKey', id: 'k', name: 'Zapier' }, actionId: 'a1', correlationId: 'a1', causationId: 'a1', ...(actionCounts ? { actionCounts } : {}) },
  });

  it('describes created, updated and deleted events with their action count', () => {
    expect(recordChange(event('RecordCreated', { fields: {} }, { clients: 21 }))).toEqual({
      workspaceId: 'ws',
      object: 'clients',
      recordId: 'r1',
      kind: 'created',
      source: 'api',
      actionId: 'a1',
      actionCount: 21,
    });
    expect(recordChange(event('RecordDeleted', { fields: {}, calculated: {}, createdAt: '', updatedAt: '' }))?.kind).toBe('deleted');
  });

  it('skips a save that only recalculated the health score, but not a change to Health', () => {
    expect(recordChange(event('RecordUpdated', { changes: { healthScore: { from: 50, to: 60 } } }))).toBeNull();
    expect(recordChange(event('RecordUpdated', { changes: { healthScore: { from: 50, to: 60 }, health: { from: 'Healthy', to: 'At Risk' } } }))?.kind).toBe('updated');
  });

  it('ignores events of other streams and types', () => {
    expect(recordChange({ ...event('RecordCreated', { fields: {} }), stream: 'workspace-ws' })).toBeNull();
    expect(recordChange(event('SomethingElse', {}))).toBeNull();
  });
});

describe('bulkChunksDue', () => {
  const group = (size: number, overrides: Partial<BulkGroup> = {}): BulkGroup => ({
    workspaceId: 'ws',
    actionId: 'a',
    object: 'clients',
    kind: 'created',
    source: 'api',
    actionCount: 1200,
    seenForObject: size,
    members: Array.from({ length: size }, (_, index) => ({ eventId: `e${index}`, recordId: `r${index}`, occurredAt: t0.toISOString() })),
    ...overrides,
  });
  const sizes = (chunks: ReturnType<typeof bulkChunksDue>) => chunks.map((chunk) => chunk.members.length);

  it('sends full chunks of 500 at once and keeps the rest while the action is incomplete and recent', () => {
    expect(sizes(bulkChunksDue([group(700)], 1000, 1000, () => 500))).toEqual([500]);
  });
  it('sends the rest once every record of the action has arrived: 1,200 make 500, 500 and 200', () => {
    expect(sizes(bulkChunksDue([group(1200)], 1000, 1000, () => 1000))).toEqual([500, 500, 200]);
  });
  it('sends the rest of a group that has been quiet for the flush time (a crash lost the count)', () => {
    expect(sizes(bulkChunksDue([group(30, { seenForObject: 30 })], 2000, 1000, () => 1000))).toEqual([30]);
    expect(sizes(bulkChunksDue([group(30, { seenForObject: 30 })], 1999, 1000, () => 1000))).toEqual([]);
  });
});

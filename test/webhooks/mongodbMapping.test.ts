import { describe, expect, it } from 'vitest';
import {
  groupMemberDocs,
  markMembersFilter,
  memberToDoc,
  purgeMembersFilter,
  seenForObjectPipeline,
  seenKey,
} from '../../src/webhooks/mongodb/bulkMembers.js';
import {
  activeDeliveriesFilter,
  claimFilter,
  deliveryFromDoc,
  dueFilter,
  firstReservedId,
  newDeliveryDoc,
  redeliveryDoc,
  planEnqueue,
  planSettle,
  settleFilter,
  settleUpdate,
  SKIP_UPDATE,
  skipFilter,
} from '../../src/webhooks/mongodb/deliveries.js';
import {
  duplicateInsertIndexes,
  enabledUpdate,
  payloadFromDoc,
  payloadToDoc,
  webhookFromDoc,
  webhookToDoc,
  WEBHOOK_INDEXES,
} from '../../src/webhooks/mongodb/mapping.js';
import type { AttemptOutcome, BulkMember, Webhook, WebhookPayload } from '../../src/webhooks/port.js';

/** The MongoDB webhook store's pure parts: they run here, where no MongoDB server can. */

const webhook: Webhook = {
  id: 'w1',
  workspaceId: 'ws',
  name: 'CRM',
  url: 'https://hooks.example.com/',
  events: ['created'],
  objects: 'all',
  enabled: true,
  disabledReason: null,
  secret: 'whsec_x',
  createdAt: '2026-01-01T00:00:00.000Z',
  consecutiveFailures: 2,
  lastSuccessAt: null,
};
const payload: WebhookPayload = {
  id: 'e1',
  workspaceId: 'ws',
  event: 'clients.created',
  object: 'clients',
  source: 'api',
  occurredAt: '2026-01-01T00:00:01.000Z',
  data: { id: 'r1', nested: { list: [1, 'two', null] } },
};

const outcome = (deliveryId: number, webhookId: string, overrides: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
  deliveryId,
  webhookId,
  succeeded: false,
  status: 'retrying',
  attempts: 1,
  responseCode: 500,
  error: 'receiver answered 500',
  lastAttemptAt: '2026-01-01T00:00:02.000Z',
  nextAttemptAt: '2026-01-01T00:01:02.000Z',
  sentAt: '2026-01-01T00:00:01.500Z',
  signature: 'sha256=' + 'c'.repeat(64),
  ...overrides,
});

describe('webhook store mapping: webhooks and payloads', () => {
  it('round-trips webhooks with the id as _id, copying the lists', () => {
    const doc = webhookToDoc(webhook);
    expect(doc).toMatchObject({ _id: 'w1', name: 'CRM', events: ['created'], objects: 'all' });
    expect(doc).not.toHaveProperty('id');
    expect(doc.events).not.toBe(webhook.events);
    expect(webhookFromDoc(doc)).toEqual(webhook);
  });

  it('keeps the mark of a listen session\'s webhook, and leaves it off every other webhook', () => {
    const listener: Webhook = { ...webhook, listener: true };
    expect(webhookToDoc(listener)).toMatchObject({ listener: true });
    expect(webhookFromDoc(webhookToDoc(listener))).toEqual(listener);
    expect(webhookToDoc(webhook)).not.toHaveProperty('listener');
    expect(webhookFromDoc(webhookToDoc(webhook))).not.toHaveProperty('listener');
  });

  it('reads missing optional fields of a webhook document as the defaults', () => {
    const { consecutiveFailures: _c, lastSuccessAt: _l, disabledReason: _d, ...partial } = webhookToDoc(webhook);
    expect(webhookFromDoc(partial as ReturnType<typeof webhookToDoc>)).toMatchObject({ consecutiveFailures: 0, lastSuccessAt: null, disabledReason: null });
  });

  it('switching on clears the reason and the failure count; off keeps the count', () => {
    expect(enabledUpdate(true, 'ignored')).toEqual({ $set: { enabled: true, disabledReason: null, consecutiveFailures: 0 } });
    expect(enabledUpdate(false, 'too many failures')).toEqual({ $set: { enabled: false, disabledReason: 'too many failures' } });
  });

  it('keeps payload data as JSON text, as the embedded store does, and reads it back', () => {
    const doc = payloadToDoc(payload);
    expect(doc).toMatchObject({ _id: 'e1', data: JSON.stringify(payload.data) });
    expect(payloadFromDoc(doc)).toEqual(payload);
    // JSON semantics: keys a MongoDB document could not hold are fine, undefined is dropped, dates are text.
    const odd = payloadToDoc({ ...payload, data: { $set: 1, 'a.b': 2, gone: undefined, when: new Date(0) } });
    expect(payloadFromDoc(odd).data).toEqual({ $set: 1, 'a.b': 2, when: '1970-01-01T00:00:00.000Z' });
    expect(payloadFromDoc(payloadToDoc({ ...payload, data: undefined })).data).toBeNull();
  });
});

describe('webhook store mapping: deliveries', () => {
  it('plans each payload once and each (webhook, event) pair once, skipping events with no webhook', () => {
    const other: WebhookPayload = { ...payload, id: 'e2' };
    const lonely: WebhookPayload = { ...payload, id: 'e3' };
    const plan = planEnqueue([
      { payload, webhookIds: ['w1', 'w2', 'w1'] },
      { payload: lonely, webhookIds: [] },
      { payload: other, webhookIds: ['w1'] },
      { payload: { ...payload, event: 'changed' }, webhookIds: ['w1', 'w3'] },
    ]);
    expect(plan.payloads.map((doc) => doc._id)).toEqual(['e1', 'e2']);
    expect(plan.payloads[0]!.event).toBe('clients.created');
    expect(plan.pairs.map((pair) => [pair.webhookId, pair.payload.id])).toEqual([
      ['w1', 'e1'],
      ['w2', 'e1'],
      ['w1', 'e2'],
      ['w3', 'e1'],
    ]);
    expect(planEnqueue([{ payload, webhookIds: [] }])).toEqual({ payloads: [], pairs: [] });
  });

  it('reserved ids run up to the counter value after the increment', () => {
    expect(firstReservedId(3, 3)).toBe(1);
    expect(firstReservedId(42, 1)).toBe(42);
  });

  it('a new delivery waits, is due at once, and carries the claim of a caller that sends it itself', () => {
    const doc = newDeliveryDoc(7, 'w1', payload, '2026-01-01T00:00:02.000Z', '2026-01-01T00:01:02.000Z');
    // The delivery's own fields, stored under the same names; the document adds _id, the claim and the redelivery key.
    const delivery = {
      webhookId: 'w1',
      eventId: 'e1',
      event: 'clients.created',
      status: 'waiting',
      responseCode: null,
      attempts: 0,
      error: null,
      createdAt: '2026-01-01T00:00:02.000Z',
      lastAttemptAt: null,
      nextAttemptAt: '2026-01-01T00:00:02.000Z',
      lastSentAt: null,
      lastSignature: null,
      cause: null,
      originalId: null,
    };
    expect(doc).toEqual({ _id: 7, ...delivery, claimedUntil: '2026-01-01T00:01:02.000Z', redeliveryKey: null });
    expect(deliveryFromDoc(doc)).toEqual({ id: 7, ...delivery });
  });

  it('a resend is keyed by its own id, so the unique index holds only fan-out deliveries to one per (webhook, event)', () => {
    const doc = redeliveryDoc(9, { payload, webhookId: 'w1', cause: 'resend', originalId: 7 }, '2026-01-01T00:00:03.000Z', null);
    expect(doc).toMatchObject({ _id: 9, eventId: 'e1', status: 'waiting', cause: 'resend', originalId: 7, redeliveryKey: 9, claimedUntil: null });
    expect(deliveryFromDoc(doc)).toMatchObject({ id: 9, cause: 'resend', originalId: 7 });
    expect(deliveryFromDoc(redeliveryDoc(10, { payload, webhookId: 'w1', cause: 'recover', originalId: null }, 'T', null))).toMatchObject({ cause: 'recover', originalId: null });
    const unique = WEBHOOK_INDEXES.deliveries.find((index) => index.unique)!;
    expect(unique.key).toEqual({ webhookId: 1, eventId: 1, redeliveryKey: 1 });
  });

  it('documents stored before resends (no cause fields) read as fan-out deliveries', () => {
    const { cause: _c, originalId: _o, redeliveryKey: _r, ...old } = newDeliveryDoc(7, 'w1', payload, 'T', null);
    expect(deliveryFromDoc(old as never)).toMatchObject({ cause: null, originalId: null });
  });

  it('due means waiting or retrying, next attempt reached, and no live claim; a claim repeats it for one delivery', () => {
    const due = {
      webhookId: 'w1',
      status: { $in: ['waiting', 'retrying'] },
      nextAttemptAt: { $lte: 'T' },
      $or: [{ claimedUntil: null }, { claimedUntil: { $lte: 'T' } }],
    };
    expect(dueFilter('w1', 'T')).toEqual(due);
    expect(claimFilter(9, 'w1', 'T')).toEqual({ _id: 9, ...due });
  });

  it('switching off skips only waiting and retrying deliveries, dropping their schedule and claim', () => {
    expect(skipFilter('w1')).toEqual({ webhookId: 'w1', status: { $in: ['waiting', 'retrying'] } });
    expect(SKIP_UPDATE).toEqual({ $set: { status: 'skipped', nextAttemptAt: null, claimedUntil: null } });
  });

  it('an outcome applies to an active delivery only and releases its claim', () => {
    const failed = outcome(4, 'w1');
    expect(activeDeliveriesFilter([4, 5])).toEqual({ _id: { $in: [4, 5] }, status: { $in: ['waiting', 'retrying'] } });
    expect(settleFilter(failed)).toEqual({ _id: 4, status: { $in: ['waiting', 'retrying'] } });
    expect(settleUpdate(failed)).toEqual({
      $set: {
        status: 'retrying',
        attempts: 1,
        responseCode: 500,
        error: 'receiver answered 500',
        lastAttemptAt: '2026-01-01T00:00:02.000Z',
        nextAttemptAt: '2026-01-01T00:01:02.000Z',
        lastSentAt: '2026-01-01T00:00:01.500Z',
        lastSignature: 'sha256=' + 'c'.repeat(64),
        claimedUntil: null,
      },
    });
  });
});

describe('webhook store mapping: settling a batch of outcomes', () => {
  it('ignores outcomes of deliveries no longer active and touches no webhook for them', () => {
    expect(planSettle([outcome(1, 'w1')], [])).toEqual({ applied: [], webhooks: [] });
  });

  it('failures add up; a success resets the count to the failures after it and moves the last success forward', () => {
    const plan = planSettle(
      [
        outcome(1, 'w1'),
        outcome(2, 'w2'),
        outcome(3, 'w1', { succeeded: true, status: 'delivered', lastAttemptAt: 'T5' }),
        outcome(4, 'w1', { succeeded: true, status: 'delivered', lastAttemptAt: 'T3' }),
        outcome(5, 'w1'),
        outcome(6, 'w2'),
      ],
      [1, 2, 3, 4, 5, 6],
    );
    expect(plan.applied.map((o) => o.deliveryId)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(plan.webhooks).toEqual([
      { webhookId: 'w1', update: { $set: { consecutiveFailures: 1 }, $max: { lastSuccessAt: 'T5' } } },
      { webhookId: 'w2', update: { $inc: { consecutiveFailures: 2 } } },
    ]);
  });

  it('replays outcomes of one delivery in order: one that ends it makes later ones not apply', () => {
    const plan = planSettle(
      [
        outcome(1, 'w1', { status: 'retrying' }),
        outcome(1, 'w1', { status: 'failed', attempts: 6, nextAttemptAt: null }),
        outcome(1, 'w1', { succeeded: true, status: 'delivered' }),
      ],
      [1],
    );
    expect(plan.applied.map((o) => o.status)).toEqual(['retrying', 'failed']);
    expect(plan.webhooks).toEqual([{ webhookId: 'w1', update: { $inc: { consecutiveFailures: 2 } } }]);
  });
});

describe('webhook store mapping: bulk members', () => {
  const member = (eventId: string, kind: BulkMember['kind'], object = 'clients'): BulkMember => ({
    eventId,
    workspaceId: 'ws',
    actionId: 'a1',
    object,
    kind,
    recordId: `r-${eventId}`,
    source: 'api',
    occurredAt: 'T',
    position: eventId,
    actionCount: 30,
  });

  it('stores a member under its event id, pending', () => {
    expect(memberToDoc(member('1', 'created'))).toEqual({
      _id: '1',
      workspaceId: 'ws',
      actionId: 'a1',
      object: 'clients',
      kind: 'created',
      recordId: 'r-1',
      source: 'api',
      occurredAt: 'T',
      position: '1',
      actionCount: 30,
      bulkId: null,
    });
  });

  it('groups pending members per action, object and kind, in the order given', () => {
    const docs = [member('1', 'created'), member('2', 'created'), member('3', 'updated'), member('4', 'created', 'billing')].map(memberToDoc);
    const groups = groupMemberDocs(docs, (_action, object) => (object === 'clients' ? 3 : 1));
    expect(groups.map((group) => [group.object, group.kind, group.members.length, group.seenForObject])).toEqual([
      ['clients', 'created', 2, 3],
      ['clients', 'updated', 1, 3],
      ['billing', 'created', 1, 1],
    ]);
    expect(groups[0]).toMatchObject({ workspaceId: 'ws', actionId: 'a1', source: 'api', actionCount: 30 });
    expect(groups[0]!.members[1]).toEqual({ eventId: '2', recordId: 'r-2', occurredAt: 'T' });
    expect(groupMemberDocs([], () => 0)).toEqual([]);
  });

  it('counts members per (action, object) of the listed actions, flushed or not', () => {
    expect(seenForObjectPipeline(['a1', 'a2'])).toEqual([
      { $match: { actionId: { $in: ['a1', 'a2'] } } },
      { $group: { _id: { actionId: '$actionId', object: '$object' }, count: { $sum: 1 } } },
    ]);
    expect(seenKey('a', 'b/c')).not.toBe(seenKey('a/b', 'c'));
  });

  it('flushes only pending members and purges only flushed ones', () => {
    expect(markMembersFilter(['1', '2'])).toEqual({ _id: { $in: ['1', '2'] }, bulkId: null });
    expect(purgeMembersFilter('T')).toEqual({ bulkId: { $ne: null }, occurredAt: { $lt: 'T' } });
  });
});

describe('webhook store mapping: indexes', () => {
  const byName = (list: { name?: string }[]) => new Map(list.map((index) => [index.name, index]));

  it('deliveries: unique per webhook and event; the due ones per webhook in claim order, partial on active', () => {
    const indexes = byName(WEBHOOK_INDEXES.deliveries);
    expect(indexes.get('unique_fan_out')).toMatchObject({ key: { webhookId: 1, eventId: 1, redeliveryKey: 1 }, unique: true });
    expect(indexes.has('unique_webhook_event')).toBe(false);
    expect(indexes.get('claim_due')).toMatchObject({
      key: { webhookId: 1, status: 1, nextAttemptAt: 1, _id: 1 },
      partialFilterExpression: { status: { $in: ['waiting', 'retrying'] } },
    });
    expect(indexes.get('newest_per_webhook')).toMatchObject({ key: { webhookId: 1, _id: -1 } });
    expect(indexes.get('by_age')).toMatchObject({ key: { createdAt: 1 } });
    expect(indexes.get('by_event')).toMatchObject({ key: { eventId: 1 } });
  });

  it('webhooks per workspace in creation order; pending bulk members in group and log order', () => {
    expect(byName(WEBHOOK_INDEXES.webhooks).get('by_workspace')).toMatchObject({ key: { workspaceId: 1, createdAt: 1 } });
    expect(byName(WEBHOOK_INDEXES.bulkMembers).get('pending')).toMatchObject({
      key: { actionId: 1, object: 1, kind: 1, position: 1 },
      partialFilterExpression: { bulkId: null },
    });
  });
});

describe('webhook store mapping: duplicate inserts', () => {
  const writeError = (index: number, code = 11000) => ({ index, code, errmsg: 'E11000 duplicate key error' });

  it('gives the positions not inserted when every write error is a duplicate key', () => {
    expect(duplicateInsertIndexes({ code: 11000, writeErrors: [writeError(0), writeError(3)], result: { getWriteConcernError: () => undefined } })).toEqual(
      new Set([0, 3]),
    );
    expect(duplicateInsertIndexes({ writeErrors: writeError(2) })).toEqual(new Set([2]));
  });

  it('refuses anything else: another write error, a write concern error, no write errors', () => {
    expect(duplicateInsertIndexes({ writeErrors: [writeError(0), writeError(1, 121)] })).toBeNull();
    expect(duplicateInsertIndexes({ writeErrors: [writeError(0)], result: { getWriteConcernError: () => ({ code: 64 }) } })).toBeNull();
    expect(duplicateInsertIndexes({ code: 11000, writeErrors: [] })).toBeNull();
    expect(duplicateInsertIndexes(new Error('network'))).toBeNull();
    expect(duplicateInsertIndexes(null)).toBeNull();
  });
});

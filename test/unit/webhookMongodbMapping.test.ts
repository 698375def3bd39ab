import { describe, expect, it } from 'vitest';
import {
  deliveryFromDoc,
  dueFilter,
  groupMemberDocs,
  memberToDoc,
  newDeliveryDoc,
  payloadFromDoc,
  payloadToDoc,
  webhookFromDoc,
  webhookToDoc,
  WEBHOOK_INDEXES,
} from '../../src/webhooks/mongodbMapping.js';
import type { BulkMember, Webhook, WebhookPayload } from '../../src/webhooks/port.js';

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
const payload: WebhookPayload = { id: 'e1', workspaceId: 'ws', event: 'clients.created', object: 'clients', source: 'api', occurredAt: '2026-01-01T00:00:01.000Z', data: { id: 'r1' } };

describe('webhook store mapping', () => {
  it('round-trips webhooks and payloads with the id as _id', () => {
    expect(webhookToDoc(webhook)).toMatchObject({ _id: 'w1', name: 'CRM' });
    expect(webhookFromDoc(webhookToDoc(webhook))).toEqual(webhook);
    expect(payloadFromDoc(payloadToDoc(payload))).toEqual(payload);
  });

  it('a new delivery waits, is due at once, and carries the claim of a caller that sends it itself', () => {
    const doc = newDeliveryDoc(7, 'w1', payload, '2026-01-01T00:00:02.000Z', '2026-01-01T00:01:02.000Z');
    expect(doc).toEqual({
      _id: 7,
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
      claimedUntil: '2026-01-01T00:01:02.000Z',
    });
    expect(deliveryFromDoc(doc)).toMatchObject({ id: 7, status: 'waiting' });
    expect(deliveryFromDoc(doc)).not.toHaveProperty('claimedUntil');
  });

  it('due means waiting or retrying, next attempt reached, and no live claim', () => {
    expect(dueFilter('w1', 'T')).toEqual({
      webhookId: 'w1',
      status: { $in: ['waiting', 'retrying'] },
      nextAttemptAt: { $lte: 'T' },
      $or: [{ claimedUntil: null }, { claimedUntil: { $lte: 'T' } }],
    });
  });

  it('the due index is partial on active deliveries and deliveries are unique per webhook and event', () => {
    const byName = new Map(WEBHOOK_INDEXES.deliveries.map((index) => [index.name, index]));
    expect(byName.get('unique_webhook_event')).toMatchObject({ key: { webhookId: 1, eventId: 1 }, unique: true });
    expect(byName.get('due')).toMatchObject({ key: { webhookId: 1, nextAttemptAt: 1 }, partialFilterExpression: { status: { $in: ['waiting', 'retrying'] } } });
  });

  it('groups pending members per action, object and kind, in the order given', () => {
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
    const docs = [member('1', 'created'), member('2', 'created'), member('3', 'updated'), member('4', 'created', 'billing')].map(memberToDoc);
    expect(docs[0]).toMatchObject({ _id: '1', bulkId: null });
    const groups = groupMemberDocs(docs, (_action, object) => (object === 'clients' ? 3 : 1));
    expect(groups.map((group) => [group.object, group.kind, group.members.length, group.seenForObject])).toEqual([
      ['clients', 'created', 2, 3],
      ['clients', 'updated', 1, 3],
      ['billing', 'created', 1, 1],
    ]);
    expect(groups[0]!.members[1]).toEqual({ eventId: '2', recordId: 'r-2', occurredAt: 'T' });
  });
});

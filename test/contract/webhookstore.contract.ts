import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptOutcome, BulkMember, Webhook, WebhookPayload, WebhookStore } from '../../src/webhooks/port.js';

/**
 * The WebhookStore port's behaviour, run against every adapter (test/contract/webhookstore.*.test.ts).
 * Every test uses its own workspace and webhook ids, so the suite can run against a shared server;
 * claims are made with a quota that only admits the test's own webhooks.
 */
/** A moment of the suites' fixed day, `second` seconds after midnight UTC. */
export const at = (second: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();

/** Creates a webhook in `store` (fresh ids, a fresh workspace unless overridden) and returns it. */
export async function createWebhook(store: WebhookStore, overrides: Partial<Webhook> = {}): Promise<Webhook> {
  const created: Webhook = {
    id: randomUUID(),
    workspaceId: randomUUID(),
    name: 'CRM sync',
    url: 'https://hooks.example.com/csr',
    events: 'all',
    objects: 'all',
    enabled: true,
    disabledReason: null,
    secret: `whsec_${randomUUID()}`,
    createdAt: at(0),
    consecutiveFailures: 0,
    lastSuccessAt: null,
    ...overrides,
  };
  await store.createWebhook(created);
  return created;
}

export function samplePayload(workspaceId: string, overrides: Partial<WebhookPayload> = {}): WebhookPayload {
  return {
    id: randomUUID(),
    workspaceId,
    event: 'clients.created',
    object: 'clients',
    source: 'api',
    occurredAt: at(1),
    data: { id: randomUUID(), name: 'Acme', nested: { list: [1, 'two', null] } },
    ...overrides,
  };
}

export function webhookStoreContract(name: string, open: () => Promise<WebhookStore> | WebhookStore): void {
  describe(`WebhookStore contract: ${name}`, () => {
    let store: WebhookStore;

    beforeAll(async () => {
      store = await open();
    });

    afterAll(async () => {
      await store?.close();
    });

    const webhook = (overrides: Partial<Webhook> = {}) => createWebhook(store, overrides);

    /** Claims as of `now`, only deliveries of the given webhooks. */
    const claim = (now: string, ids: string[], perWebhook = 100, limit = 100) =>
      store.claimDue(now, new Date(Date.parse(now) + 30_000).toISOString(), limit, (id) => (ids.includes(id) ? perWebhook : 0));

    function outcome(deliveryId: number, webhookId: string, overrides: Partial<AttemptOutcome> = {}): AttemptOutcome {
      return {
        deliveryId,
        webhookId,
        succeeded: false,
        status: 'retrying',
        attempts: 1,
        responseCode: 500,
        error: 'receiver answered 500',
        lastAttemptAt: at(2),
        nextAttemptAt: at(62),
        sentAt: at(2),
        signature: 'sha256=' + 'a'.repeat(64),
        ...overrides,
      };
    }

    it('redacts erased records in stored payloads (the record and links to it); a pending delivery then carries null', async () => {
      const hook = await webhook();
      const contact = randomUUID();
      const own = samplePayload(hook.workspaceId, { event: 'contacts.created', object: 'contacts', data: { id: contact, name: 'Ann Lee', email: 'ann@example.com', role: 'CEO' } });
      const linking = samplePayload(hook.workspaceId, { event: 'conversations.created', object: 'conversations', data: { id: randomUUID(), contacts: [{ id: contact, name: 'Ann Lee' }] } });
      const other = samplePayload(randomUUID(), { data: { id: contact, name: 'Ann Lee', email: 'ann@example.com' } });
      await store.enqueue([{ payload: own, webhookIds: [hook.id] }, { payload: linking, webhookIds: [hook.id] }], at(1));
      await store.enqueue([{ payload: other, webhookIds: [hook.id] }], at(1));
      expect(await store.redactPayloads(hook.workspaceId, [contact], ['email', 'firstName'])).toBe(2);
      expect((await store.payloadById(own.id))!.data).toEqual({ id: contact, name: null, email: null, role: 'CEO' });
      expect((await store.payloadById(linking.id))!.data).toEqual({ id: linking.data && (linking.data as { id: string }).id, contacts: [{ id: contact, name: null }] });
      expect((await store.payloadById(other.id))!.data).toEqual(other.data);
      const claimed = await claim(at(2), [hook.id]);
      const mine = claimed.filter((each) => each.payload.workspaceId === hook.workspaceId);
      expect(mine).toHaveLength(2);
      expect(JSON.stringify(mine.map((each) => each.payload.data))).not.toContain('ann@example.com');
      expect(await store.redactPayloads(hook.workspaceId, [contact], ['email', 'firstName'])).toBe(0);
    });

    it('stores webhooks and lists them per workspace in creation order', async () => {
      const first = await webhook({ events: ['created', 'deleted'], objects: ['clients', 'billing'] });
      const second = await webhook({ workspaceId: first.workspaceId, name: 'Second', createdAt: at(5) });
      await webhook();
      expect(await store.webhookById(first.id)).toEqual(first);
      expect(await store.listWebhooks(first.workspaceId)).toEqual([first, second]);
      expect(await store.webhookById(randomUUID())).toBeNull();
    });

    it('lists webhooks created in the same millisecond by id', async () => {
      const workspaceId = randomUUID();
      // Created in the opposite order of their ids.
      const second = await webhook({ workspaceId, id: `ffffffff${randomUUID().slice(8)}`, createdAt: at(3) });
      const first = await webhook({ workspaceId, id: `00000000${randomUUID().slice(8)}`, createdAt: at(3) });
      expect((await store.listWebhooks(workspaceId)).map((hook) => hook.id)).toEqual([first.id, second.id]);
    });

    it('enqueues one delivery per webhook and event, and ignores a repeat of the pair', async () => {
      const a = await webhook();
      const b = await webhook({ workspaceId: a.workspaceId });
      const event = samplePayload(a.workspaceId);
      const created = await store.enqueue([{ payload: event, webhookIds: [a.id, b.id] }], at(1));
      expect(created).toHaveLength(2);
      expect(created[0]).toMatchObject({ webhookId: a.id, eventId: event.id, event: 'clients.created', status: 'waiting', attempts: 0, responseCode: null, error: null, createdAt: at(1), lastAttemptAt: null, lastSentAt: null, lastSignature: null });
      expect(created[0]!.id).not.toBe(created[1]!.id);
      expect(Number.isInteger(created[0]!.id)).toBe(true);
      expect(await store.enqueue([{ payload: event, webhookIds: [a.id, b.id] }], at(3))).toEqual([]);
      expect(await store.deliveries(a.id, 50)).toHaveLength(1);
    });

    it('redelivers an event as a new delivery with its cause, however often, while the fan-out still makes one per pair', async () => {
      const hook = await webhook();
      const event = samplePayload(hook.workspaceId);
      const [original] = await store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(1));
      expect(original).toMatchObject({ cause: null, originalId: null });
      expect(await store.payloadById(event.id)).toEqual(event);
      expect(await store.payloadById(randomUUID())).toBeNull();
      const [first] = await store.redeliver([{ payload: event, webhookId: hook.id, cause: 'resend', originalId: original!.id }], at(2), { claimedUntil: at(60) });
      const [second] = await store.redeliver([{ payload: event, webhookId: hook.id, cause: 'resend', originalId: original!.id }], at(3));
      expect(first).toMatchObject({ webhookId: hook.id, eventId: event.id, event: event.event, status: 'waiting', cause: 'resend', originalId: original!.id, createdAt: at(2) });
      expect(new Set([original!.id, first!.id, second!.id]).size).toBe(3);
      expect(await store.deliveryById(second!.id)).toEqual(second);
      // The fan-out still ignores a repeat of its pair.
      expect(await store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(4))).toEqual([]);
      // Only the unclaimed resend is due; it comes with the stored payload.
      const claimed = await claim(at(5), [hook.id]);
      expect(claimed.map((item) => item.delivery.id).sort()).toEqual([original!.id, second!.id].sort());
      expect(claimed.every((item) => JSON.stringify(item.payload) === JSON.stringify(event))).toBe(true);
      // A recovered event (never fanned out, e.g. while off) brings its payload along.
      const missed = samplePayload(hook.workspaceId);
      const [recovered] = await store.redeliver([{ payload: missed, webhookId: hook.id, cause: 'recover', originalId: null }], at(6));
      expect(recovered).toMatchObject({ cause: 'recover', originalId: null, eventId: missed.id });
      expect(await store.payloadById(missed.id)).toEqual(missed);
      expect((await store.deliveries(hook.id, 50)).map((d) => d.cause)).toEqual(['recover', 'resend', 'resend', null]);
      const ofEvents = await store.deliveriesOfEvents(hook.id, [event.id, randomUUID()]);
      expect(ofEvents.map((d) => d.id)).toEqual([original!.id, first!.id, second!.id]);
      expect(await store.deliveriesOfEvents(hook.id, [])).toEqual([]);
      expect(await store.deliveriesOfEvents(randomUUID(), [event.id])).toEqual([]);
    });

    it('counts deliveries by status, in flight and retrying, and knows the oldest pending one', async () => {
      const hooks = [await webhook()];
      hooks.push(await webhook({ workspaceId: hooks[0]!.workspaceId }), await webhook({ workspaceId: hooks[0]!.workspaceId }));
      const ids = hooks.map((hook) => hook.id);
      const before = await store.deliveryStats(at(2));
      await store.enqueue([{ payload: samplePayload(hooks[0]!.workspaceId), webhookIds: ids }], at(1));
      const queued = await store.deliveryStats(at(2));
      expect(queued.byStatus.waiting - before.byStatus.waiting).toBe(3);
      expect(queued.oldestPendingAt !== null && queued.oldestPendingAt <= at(1)).toBe(true);
      const [claimed] = await claim(at(1), [ids[0]!]);
      const sending = await store.deliveryStats(at(2));
      expect(sending.inFlight - before.inFlight).toBe(1);
      await store.settle([outcome(claimed!.delivery.id, ids[0]!)]);
      const settled = await store.deliveryStats(at(2));
      expect(settled.inFlight - before.inFlight).toBe(0);
      expect(settled.retrying - before.retrying).toBe(1);
      expect(settled.byStatus.retrying - before.byStatus.retrying).toBe(1);
      expect(settled.byStatus.waiting - before.byStatus.waiting).toBe(2);
    });

    it('claims due deliveries once, with their webhook and payload, until the lease ends', async () => {
      const hook = await webhook();
      const event = samplePayload(hook.workspaceId);
      await store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(1));
      expect(await claim(at(0), [hook.id])).toEqual([]);
      const [claimed] = await claim(at(1), [hook.id]);
      expect(claimed!.webhook).toEqual(hook);
      expect(claimed!.payload).toEqual(event);
      expect(await claim(at(2), [hook.id])).toEqual([]);
      // The lease is 30 s: then the delivery is due again (its sender died).
      expect(await claim(at(40), [hook.id])).toHaveLength(1);
    });

    it('claims at most the quota per webhook and the limit in all, so one busy webhook cannot take every slot', async () => {
      const busy = await webhook();
      const quiet = await webhook({ workspaceId: busy.workspaceId });
      const events = Array.from({ length: 30 }, () => samplePayload(busy.workspaceId));
      await store.enqueue(events.map((event) => ({ payload: event, webhookIds: [busy.id] })), at(1));
      await store.enqueue([{ payload: samplePayload(busy.workspaceId), webhookIds: [quiet.id] }], at(1));
      const claimed = await claim(at(5), [busy.id, quiet.id], 4, 10);
      expect(claimed.filter((item) => item.webhook.id === busy.id)).toHaveLength(4);
      expect(claimed.filter((item) => item.webhook.id === quiet.id)).toHaveLength(1);
    });

    it('settles outcomes: retrying comes back when due, delivered resets the failure count', async () => {
      const hook = await webhook();
      await store.enqueue([{ payload: samplePayload(hook.workspaceId), webhookIds: [hook.id] }], at(1));
      const [first] = await claim(at(1), [hook.id]);
      const failed = outcome(first!.delivery.id, hook.id);
      const [afterFailure] = await store.settle([failed]);
      expect(afterFailure).toMatchObject({ id: hook.id, consecutiveFailures: 1, lastSuccessAt: null });
      const { status, attempts, responseCode, error, lastAttemptAt, nextAttemptAt } = failed;
      expect(await store.deliveryById(first!.delivery.id)).toMatchObject({
        ...{ status, attempts, responseCode, error, lastAttemptAt, nextAttemptAt },
        // The headers of the last attempt, for the Setup page's delivery view.
        lastSentAt: failed.sentAt,
        lastSignature: failed.signature,
      });
      expect(await claim(at(61), [hook.id])).toEqual([]);
      const [again] = await claim(at(62), [hook.id]);
      expect(again!.delivery.attempts).toBe(1);
      const [afterSuccess] = await store.settle([
        outcome(again!.delivery.id, hook.id, { succeeded: true, status: 'delivered', attempts: 2, responseCode: 204, error: null, lastAttemptAt: at(63), nextAttemptAt: null, sentAt: at(62), signature: 'sha256=' + 'b'.repeat(64) }),
      ]);
      expect(afterSuccess).toMatchObject({ consecutiveFailures: 0, lastSuccessAt: at(63) });
      expect(await store.deliveryById(again!.delivery.id)).toMatchObject({ status: 'delivered', attempts: 2, responseCode: 204, error: null, nextAttemptAt: null, lastSentAt: at(62), lastSignature: 'sha256=' + 'b'.repeat(64) });
      expect(await claim(at(500), [hook.id])).toEqual([]);
    });

    it('switching off skips waiting and retrying deliveries, never to be sent; an outcome arriving after that changes nothing', async () => {
      const hook = await webhook();
      const events = [samplePayload(hook.workspaceId), samplePayload(hook.workspaceId)];
      await store.enqueue(events.map((event) => ({ payload: event, webhookIds: [hook.id] })), at(1));
      const [inFlight] = await claim(at(1), [hook.id], 1);
      const off = await store.setEnabled(hook.id, false, 'switched off by an administrator');
      expect(off).toMatchObject({ enabled: false, disabledReason: 'switched off by an administrator' });
      expect((await store.deliveries(hook.id, 50)).map((d) => d.status)).toEqual(['skipped', 'skipped']);
      expect(await store.settle([outcome(inFlight!.delivery.id, hook.id)])).toEqual([]);
      expect((await store.deliveryById(inFlight!.delivery.id))!.status).toBe('skipped');
      const on = await store.setEnabled(hook.id, true, null);
      expect(on).toMatchObject({ enabled: true, disabledReason: null, consecutiveFailures: 0 });
      expect(await claim(at(600), [hook.id])).toEqual([]);
      expect(await store.setEnabled(randomUUID(), false, 'x')).toBeNull();
    });

    it('deleting a webhook removes it and its deliveries; nothing of it is claimed again; an unknown one answers null', async () => {
      const hook = await webhook();
      const other = await webhook({ workspaceId: hook.workspaceId });
      const payload = samplePayload(hook.workspaceId);
      await store.enqueue([{ payload, webhookIds: [hook.id, other.id] }], at(1));
      expect(await store.deleteWebhook(hook.id)).toMatchObject({ id: hook.id });
      expect(await store.webhookById(hook.id)).toBeNull();
      expect((await store.listWebhooks(hook.workspaceId)).map((each) => each.id)).toEqual([other.id]);
      expect(await store.deliveries(hook.id, 50)).toEqual([]);
      expect((await claim(at(2), [hook.id, other.id])).map((claimed) => claimed.webhook.id)).toEqual([other.id]);
      expect(await store.deleteWebhook(hook.id)).toBeNull();
    });

    it('switching on skips deliveries enqueued while the webhook was off: their changes were made, or switched off, while it was off', async () => {
      const hook = await webhook();
      await store.setEnabled(hook.id, false, 'switched off by an administrator');
      // A fan-out that judged the change before the switch-off enqueues it after.
      await store.enqueue([{ payload: samplePayload(hook.workspaceId), webhookIds: [hook.id] }], at(1));
      await store.setEnabled(hook.id, true, null);
      expect((await store.deliveries(hook.id, 50)).map((d) => d.status)).toEqual(['skipped']);
      expect(await claim(at(600), [hook.id])).toEqual([]);
    });

    it('an edited webhook keeps its id, secret and state, with the new name, URL and filters', async () => {
      const hook = await webhook();
      const changes = { name: 'Edited', url: 'https://edited.example.com/hook', events: ['deleted'] as Webhook['events'], objects: ['tasks'] };
      expect(await store.updateWebhook(hook.id, changes)).toEqual({ ...hook, ...changes });
      expect(await store.webhookById(hook.id)).toEqual({ ...hook, ...changes });
      expect(await store.updateWebhook(randomUUID(), changes)).toBeNull();
    });

    it('a rotated secret is what the next claim signs with', async () => {
      const hook = await webhook();
      await store.enqueue([{ payload: samplePayload(hook.workspaceId), webhookIds: [hook.id] }], at(1));
      expect(await store.setSecret(hook.id, 'whsec_new')).toMatchObject({ secret: 'whsec_new' });
      const [claimed] = await claim(at(1), [hook.id]);
      expect(claimed!.webhook.secret).toBe('whsec_new');
      expect(await store.setSecret(randomUUID(), 'x')).toBeNull();
    });

    it('a delivery enqueued as claimed (a test event sent by csr) is not claimed by a dispatcher', async () => {
      const hook = await webhook();
      await store.enqueue([{ payload: samplePayload(hook.workspaceId), webhookIds: [hook.id] }], at(1), { claimedUntil: at(31) });
      expect(await claim(at(2), [hook.id])).toEqual([]);
      expect(await claim(at(31), [hook.id])).toHaveLength(1);
    });

    it('a listen session\'s webhook is never claimed by a dispatcher, only by a claim naming it, which takes nothing else', async () => {
      const listener = await webhook({ listener: true, url: 'http://localhost:3000/hooks' });
      const ordinary = await webhook({ workspaceId: listener.workspaceId });
      expect(await store.webhookById(listener.id)).toEqual(listener);
      expect(await store.webhookById(ordinary.id)).not.toHaveProperty('listener');
      await store.enqueue([{ payload: samplePayload(listener.workspaceId), webhookIds: [listener.id, ordinary.id] }], at(1));
      const dispatcher = await claim(at(2), [listener.id, ordinary.id]);
      expect(dispatcher.map((item) => item.webhook.id)).toEqual([ordinary.id]);
      const pulled = await store.claimDue(at(2), at(32), 10, (id) => (id === listener.id || id === ordinary.id ? 10 : 0), { listener: listener.id });
      expect(pulled.map((item) => [item.webhook.id, item.webhook.url])).toEqual([[listener.id, 'http://localhost:3000/hooks']]);
      // Naming an ordinary webhook as the listener claims nothing: it is the dispatchers' to send.
      await store.enqueue([{ payload: samplePayload(listener.workspaceId), webhookIds: [ordinary.id] }], at(3));
      expect(await store.claimDue(at(4), at(34), 10, (id) => (id === ordinary.id ? 10 : 0), { listener: ordinary.id })).toEqual([]);
    });

    it('lists the newest deliveries first, up to the limit', async () => {
      const hook = await webhook();
      const events = Array.from({ length: 5 }, () => samplePayload(hook.workspaceId));
      for (const event of events) await store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(1));
      const listed = await store.deliveries(hook.id, 3);
      expect(listed.map((d) => d.eventId)).toEqual([events[4]!.id, events[3]!.id, events[2]!.id]);
      expect((await store.deliveries(hook.id, 2.9)).map((d) => d.eventId)).toEqual([events[4]!.id, events[3]!.id]);
      expect(await store.deliveries(hook.id, 0)).toEqual([]);
      expect(await store.deliveries(hook.id, -1)).toEqual([]);
    });

    it('keeps bulk members once, groups them per action, object and kind in log order, and flushes each member once', async () => {
      const hook = await webhook();
      const actionId = randomUUID();
      const member = (index: number, kind: BulkMember['kind']): BulkMember => ({
        eventId: randomUUID(),
        workspaceId: hook.workspaceId,
        actionId,
        object: 'clients',
        kind,
        recordId: randomUUID(),
        source: 'api',
        occurredAt: at(index),
        position: `${String(index).padStart(20, '0')}:${String(index).padStart(20, '0')}`,
        actionCount: 4,
      });
      const members = [member(3, 'created'), member(1, 'created'), member(2, 'updated')];
      await store.addBulkMembers(members);
      await store.addBulkMembers([members[0]!]);
      const groups = (await store.bulkGroups()).filter((group) => group.actionId === actionId);
      expect(groups).toHaveLength(2);
      const created = groups.find((group) => group.kind === 'created')!;
      expect(created).toMatchObject({ workspaceId: hook.workspaceId, object: 'clients', source: 'api', actionCount: 4, seenForObject: 3 });
      expect(created.members.map((m) => m.recordId)).toEqual([members[1]!.recordId, members[0]!.recordId]);

      const bulk = samplePayload(hook.workspaceId, { event: 'clients.created.bulk', data: { count: 2, ids: created.members.map((m) => m.recordId) } });
      expect(await store.flushBulk(created.members.map((m) => m.eventId), bulk, [hook.id], at(4))).toBe(true);
      expect(await store.flushBulk(created.members.map((m) => m.eventId), { ...bulk, id: randomUUID() }, [hook.id], at(4))).toBe(false);
      const after = (await store.bulkGroups()).filter((group) => group.actionId === actionId);
      expect(after.map((group) => group.kind)).toEqual(['updated']);
      expect(after[0]!.seenForObject).toBe(3);
      expect((await store.deliveries(hook.id, 50)).map((d) => d.eventId)).toEqual([bulk.id]);
      // A member already flushed and redelivered by the subscription is not pending again.
      await store.addBulkMembers([members[1]!]);
      expect((await store.bulkGroups()).filter((group) => group.actionId === actionId && group.kind === 'created')).toEqual([]);
    });

    it('purges deliveries older than the cut-off, with the payloads nothing needs any more', async () => {
      const hook = await webhook();
      const old = samplePayload(hook.workspaceId);
      const recent = samplePayload(hook.workspaceId);
      await store.enqueue([{ payload: old, webhookIds: [hook.id] }], at(1));
      await store.enqueue([{ payload: recent, webhookIds: [hook.id] }], at(20));
      expect(await store.purge(at(10))).toBeGreaterThanOrEqual(1);
      expect((await store.deliveries(hook.id, 50)).map((d) => d.eventId)).toEqual([recent.id]);
      const [claimed] = await claim(at(20), [hook.id]);
      expect(claimed!.payload).toEqual(recent);
    });
  });
}

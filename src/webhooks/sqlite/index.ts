import { redactPayloadData } from '../redact.js';
import { claimableBy } from '../policy.js';
import { groupPendingMembers, type PendingMember } from '../bulkGroups.js';
import { openSqliteFile } from '../../sqlite/file.js';
import type {
  AttemptOutcome,
  ClaimedDelivery,
  Delivery,
  DeliveryStats,
  DeliveryStatus,
  Redelivery,
  Webhook,
  WebhookPayload,
  WebhookStore,
} from '../port.js';
import { applyWebhookSchema } from './schema.js';
import { toDelivery, toWebhook, type DeliveryRow, type WebhookRow } from './rows.js';
import { toPayload, type PayloadRow } from '../payloadRow.js';
import { prepare } from './statements.js';

/**
 * The embedded webhook store (better-sqlite3, `webhooks.db`). Deliveries cannot be rebuilt once
 * their event is acknowledged on the subscription, so every commit is fsynced. The `csr` tool
 * writes webhooks (and sends test events) in the same file while the dispatcher runs.
 */

/** Rolls a bulk flush back: another dispatcher sent one of its members first. */
class AlreadySent extends Error {}

export function openSqliteWebhookStore(options: { path: string }): WebhookStore {
  const db = openSqliteFile(options.path, { synchronous: 'FULL' });
  applyWebhookSchema(db);
  const s = prepare(db);

  const webhookById = (id: string): Webhook | null => {
    const row = s.webhookById.get(id) as WebhookRow | undefined;
    return row ? toWebhook(row) : null;
  };

  const enqueue = (items: { payload: WebhookPayload; webhookIds: string[] }[], at: string, claimedUntil: string | null): Delivery[] => {
    const created: Delivery[] = [];
    for (const { payload, webhookIds } of items) {
      if (webhookIds.length === 0) continue;
      s.insertPayload.run({ ...payload, data: JSON.stringify(payload.data) });
      for (const webhookId of webhookIds) {
        const row = s.insertDelivery.get({ webhookId, eventId: payload.id, event: payload.event, at, claimedUntil }) as DeliveryRow | undefined;
        if (row) created.push(toDelivery(row));
      }
    }
    return created;
  };

  const redeliver = (items: Redelivery[], at: string, claimedUntil: string | null): Delivery[] =>
    items.map(({ payload, webhookId, cause, originalId }) => {
      s.insertPayload.run({ ...payload, data: JSON.stringify(payload.data) });
      return toDelivery(s.insertRedelivery.get({ webhookId, eventId: payload.id, event: payload.event, at, claimedUntil, cause, originalId }) as DeliveryRow);
    });

  const claim = db.transaction((now: string, leaseUntil: string, limit: number, quota: (webhookId: string) => number, listener?: string) => {
    const claimed: ClaimedDelivery[] = [];
    const webhooks = (s.enabledWebhooks.all() as WebhookRow[]).map(toWebhook).filter((webhook) => claimableBy(webhook, listener));
    // Start at a different webhook each time, so that a full batch does not always favour the first ones.
    const start = webhooks.length === 0 ? 0 : Math.floor(Math.random() * webhooks.length);
    for (let i = 0; i < webhooks.length && claimed.length < limit; i++) {
      const webhook = webhooks[(start + i) % webhooks.length]!;
      const take = Math.min(quota(webhook.id), limit - claimed.length);
      if (take <= 0) continue;
      for (const row of s.dueOf.all(webhook.id, now, now, take) as DeliveryRow[]) {
        s.claimDelivery.run(leaseUntil, row.id);
        const payload = s.payloadById.get(row.event_id) as PayloadRow | undefined;
        if (payload) claimed.push({ delivery: toDelivery(row), webhook, payload: toPayload(payload) });
      }
    }
    return claimed;
  });

  const settle = db.transaction((outcomes: AttemptOutcome[]) => {
    const touched = new Set<string>();
    for (const outcome of outcomes) {
      if (s.settleDelivery.run(outcome).changes === 0) continue;
      if (outcome.succeeded) s.webhookSucceeded.run({ at: outcome.lastAttemptAt, id: outcome.webhookId });
      else s.webhookFailed.run(outcome.webhookId);
      touched.add(outcome.webhookId);
    }
    return [...touched].map(webhookById).filter((webhook): webhook is Webhook => webhook !== null);
  });

  const remove = db.transaction((id: string): Webhook | null => {
    const removed = webhookById(id);
    if (!removed) return null;
    s.deleteDeliveries.run(id);
    s.deleteWebhook.run(id);
    return removed;
  });

  const setEnabled = db.transaction((id: string, enabled: boolean, reason: string | null) => {
    if (s.setEnabled.run(enabled ? 1 : 0, enabled ? null : reason, id).changes === 0) return null;
    // Off skips what is waiting; on skips what was enqueued while off (judged before the switch-off).
    s.skipWaiting.run(id);
    // A webhook switched back on starts counting failures afresh.
    if (enabled) s.resetFailures.run(id);
    return webhookById(id);
  });

  const flushBulk = db.transaction((eventIds: string[], payload: WebhookPayload, webhookIds: string[], at: string) => {
    for (const eventId of eventIds) {
      if (s.markMember.run(payload.id, eventId).changes === 0) throw new AlreadySent();
    }
    enqueue([{ payload, webhookIds }], at, null);
  });

  const purge = db.transaction((before: string) => {
    const deleted = s.purgeDeliveries.run(before).changes;
    s.purgePayloads.run();
    s.purgeMembers.run(before);
    return deleted;
  });

  /** One snapshot: the counts and the oldest pending agree. */
  const stats = db.transaction((now: string): DeliveryStats => {
    const byStatus: Record<DeliveryStatus, number> = { waiting: 0, retrying: 0, delivered: 0, failed: 0, skipped: 0 };
    for (const row of db.prepare('SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status').all() as { status: DeliveryStatus; n: number }[]) {
      byStatus[row.status] = row.n;
    }
    const inFlight = db
      .prepare("SELECT COUNT(*) AS n FROM deliveries WHERE status IN ('waiting', 'retrying') AND claimed_until > ?")
      .get(now) as { n: number };
    const oldest = db.prepare("SELECT MIN(created_at) AS at FROM deliveries WHERE status IN ('waiting', 'retrying')").get() as { at: string | null };
    return { byStatus, inFlight: inFlight.n, retrying: byStatus.retrying, oldestPendingAt: oldest.at };
  });

  return {
    async createWebhook(webhook) {
      s.insertWebhook.run({
        ...webhook,
        events: JSON.stringify(webhook.events),
        objects: JSON.stringify(webhook.objects),
        enabled: webhook.enabled ? 1 : 0,
        listener: webhook.listener ? 1 : 0,
      });
    },
    async webhookById(id) {
      return webhookById(id);
    },
    async listWebhooks(workspaceId) {
      return (s.listWebhooks.all(workspaceId) as WebhookRow[]).map(toWebhook);
    },
    async deleteWebhook(id) {
      return remove.immediate(id);
    },
    async setEnabled(id, enabled, reason) {
      return setEnabled.immediate(id, enabled, reason);
    },
    async setSecret(id, secret) {
      return s.setSecret.run(secret, id).changes === 0 ? null : webhookById(id);
    },
    async updateWebhook(id, changes) {
      const changed = s.updateWebhook.run(changes.name, changes.url, JSON.stringify(changes.events), JSON.stringify(changes.objects), id).changes;
      return changed === 0 ? null : webhookById(id);
    },
    async enqueue(items, at, options) {
      return db.transaction(enqueue).immediate(items, at, options?.claimedUntil ?? null);
    },
    async claimDue(now, leaseUntil, limit, quota, options) {
      return claim.immediate(now, leaseUntil, limit, quota, options?.listener);
    },
    async settle(outcomes) {
      return settle.immediate(outcomes);
    },
    async deliveries(webhookId, limit) {
      const count = Math.floor(limit);
      // SQLite reads a negative LIMIT as "no limit".
      if (!(count > 0)) return [];
      return (s.deliveriesOf.all(webhookId, count) as DeliveryRow[]).map(toDelivery);
    },
    async deliveryById(id) {
      const row = s.deliveryById.get(id) as DeliveryRow | undefined;
      return row ? toDelivery(row) : null;
    },
    async deliveriesOfEvents(webhookId, eventIds) {
      if (eventIds.length === 0) return [];
      return (s.deliveriesOfEvents.all(webhookId, JSON.stringify(eventIds)) as DeliveryRow[]).map(toDelivery);
    },
    async payloadById(id) {
      const row = s.payloadById.get(id) as PayloadRow | undefined;
      return row ? toPayload(row) : null;
    },
    async redactPayloads(workspaceId, recordIds, fields) {
      const ids = new Set(recordIds);
      const keys = new Set(fields);
      return db.transaction(() => {
        let count = 0;
        const seen = new Set<string>();
        for (const recordId of ids) {
          for (const row of s.payloadsMentioning.all(workspaceId, recordId) as { id: string; data: string }[]) {
            if (seen.has(row.id)) continue;
            seen.add(row.id);
            const redacted = redactPayloadData(JSON.parse(row.data), ids, keys);
            if (redacted !== null) count += s.setPayloadData.run(JSON.stringify(redacted), row.id).changes;
          }
        }
        return count;
      }).immediate();
    },
    async redeliver(items, at, options) {
      return db.transaction(redeliver).immediate(items, at, options?.claimedUntil ?? null);
    },
    async addBulkMembers(members) {
      db.transaction(() => {
        for (const member of members) s.insertMember.run(member);
      }).immediate();
    },
    async bulkGroups() {
      return groupPendingMembers(s.pendingMembers.all() as PendingMember[]);
    },
    async flushBulk(eventIds, payload, webhookIds, at) {
      try {
        flushBulk.immediate(eventIds, payload, webhookIds, at);
        return true;
      } catch (error) {
        if (error instanceof AlreadySent) return false;
        throw error;
      }
    },
    async purge(before) {
      return purge.immediate(before);
    },
    async deliveryStats(now) {
      return stats.immediate(now);
    },
    async close() {
      db.close();
    },
  };
}

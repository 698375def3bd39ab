import { groupPendingMembers, type PendingMember } from '../bulkGroups.js';
import { claimableBy } from '../policy.js';
import { redactPayloadData } from '../redact.js';
import { mappingPostgresErrors } from '../../postgres/errors.js';
import { migrate } from '../../postgres/migrate.js';
import { inTransaction, type Pool, type PoolClient } from '../../postgres/pool.js';
import type { ClaimedDelivery, Delivery, DeliveryStats, DeliveryStatus, Redelivery, Webhook, WebhookPayload, WebhookStore } from '../port.js';
import { toDelivery, toWebhook, type DeliveryRow, type WebhookRow } from './rows.js';
import { toPayload, type PayloadRow } from '../payloadRow.js';
import { WEBHOOK_MIGRATION } from './schema.js';

/**
 * The webhook store on PostgreSQL, shared by every dispatcher of the webhook group. Dispatchers
 * compete for due deliveries: a claim marks rows it locked with FOR UPDATE SKIP LOCKED as claimed
 * until the lease's end, so two dispatchers never take the same row, and a dispatcher that dies
 * holding claims only delays them until the lease lapses (at least once). Changes that must hold
 * together (a switch-off and the skipping of what waits, a bulk flush and its enqueue) are one
 * transaction each.
 */

type Queryable = Pick<Pool, 'query'> | PoolClient;

/** Rolls a bulk flush back: another dispatcher sent one of its members first. */
class AlreadySent extends Error {}

const PENDING = "status IN ('waiting', 'retrying')";

/** A claimed delivery's row, with its payload's columns alongside (null when the payload is gone). */
interface ClaimedRow extends DeliveryRow {
  p_id: string | null;
  p_workspace_id: string;
  p_event: string;
  p_object: string | null;
  p_source: string;
  p_occurred_at: string;
  p_data: string;
}

async function insertPayload(db: Queryable, payload: WebhookPayload): Promise<void> {
  await db.query(
    `INSERT INTO csr_webhook_payloads (id, workspace_id, event, object, source, occurred_at, data)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
    [payload.id, payload.workspaceId, payload.event, payload.object, payload.source, payload.occurredAt, JSON.stringify(payload.data)],
  );
}

async function enqueueIn(db: Queryable, items: { payload: WebhookPayload; webhookIds: string[] }[], at: string, claimedUntil: string | null): Promise<Delivery[]> {
  const created: Delivery[] = [];
  for (const { payload, webhookIds } of items) {
    if (webhookIds.length === 0) continue;
    await insertPayload(db, payload);
    // A concurrent enqueue of the same pair waits on the unique index and then inserts nothing.
    const rows = await db.query<DeliveryRow>(
      `INSERT INTO csr_deliveries (webhook_id, event_id, event, status, created_at, next_attempt_at, claimed_until)
       SELECT webhook_id, $2, $3, 'waiting', $4, $4, $5 FROM unnest($1::text[]) WITH ORDINALITY AS w (webhook_id, n) ORDER BY n
       ON CONFLICT (webhook_id, event_id) WHERE cause IS NULL DO NOTHING RETURNING *`,
      [webhookIds, payload.id, payload.event, at, claimedUntil],
    );
    const byWebhook = new Map(rows.rows.map((row) => [row.webhook_id, row]));
    for (const webhookId of webhookIds) {
      const row = byWebhook.get(webhookId);
      if (row) created.push(toDelivery(row));
    }
  }
  return created;
}

async function webhookIn(db: Queryable, id: string): Promise<Webhook | null> {
  const found = await db.query<WebhookRow>('SELECT * FROM csr_webhooks WHERE id = $1', [id]);
  return found.rows[0] ? toWebhook(found.rows[0]) : null;
}

export async function openPostgresWebhookStore(options: { pool: Pool }): Promise<WebhookStore> {
  const { pool } = options;
  await migrate(pool, WEBHOOK_MIGRATION);

  /** Claims up to `take` due deliveries of one webhook, skipping rows another dispatcher is claiming. */
  async function claimOf(webhook: Webhook, now: string, leaseUntil: string, take: number): Promise<ClaimedDelivery[]> {
    const rows = await pool.query<ClaimedRow>(
      `WITH claimed AS (
         UPDATE csr_deliveries SET claimed_until = $3
         WHERE id IN (
           SELECT id FROM csr_deliveries
           WHERE webhook_id = $1 AND ${PENDING} AND next_attempt_at <= $2 AND (claimed_until IS NULL OR claimed_until <= $2)
           ORDER BY next_attempt_at, id LIMIT $4
           FOR UPDATE SKIP LOCKED)
         RETURNING *)
       SELECT c.*, p.id AS p_id, p.workspace_id AS p_workspace_id, p.event AS p_event, p.object AS p_object, p.source AS p_source,
              p.occurred_at AS p_occurred_at, p.data AS p_data
       FROM claimed c LEFT JOIN csr_webhook_payloads p ON p.id = c.event_id
       ORDER BY c.next_attempt_at, c.id`,
      [webhook.id, now, leaseUntil, take],
    );
    const claimed: ClaimedDelivery[] = [];
    for (const row of rows.rows) {
      if (row.p_id === null) continue;
      const payload: PayloadRow = {
        id: row.p_id,
        workspace_id: row.p_workspace_id,
        event: row.p_event,
        object: row.p_object,
        source: row.p_source,
        occurred_at: row.p_occurred_at,
        data: row.p_data,
      };
      claimed.push({ delivery: toDelivery(row), webhook, payload: toPayload(payload) });
    }
    return claimed;
  }

  return mappingPostgresErrors<WebhookStore>({
    async createWebhook(webhook) {
      await pool.query(
        `INSERT INTO csr_webhooks (id, workspace_id, name, url, events, objects, enabled, disabled_reason, secret, created_at,
           consecutive_failures, last_success_at, listener)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        [
          webhook.id,
          webhook.workspaceId,
          webhook.name,
          webhook.url,
          JSON.stringify(webhook.events),
          JSON.stringify(webhook.objects),
          webhook.enabled,
          webhook.disabledReason,
          webhook.secret,
          webhook.createdAt,
          webhook.consecutiveFailures,
          webhook.lastSuccessAt,
          webhook.listener === true,
        ],
      );
    },

    webhookById: (id) => webhookIn(pool, id),

    async listWebhooks(workspaceId) {
      const found = await pool.query<WebhookRow>('SELECT * FROM csr_webhooks WHERE workspace_id = $1 ORDER BY created_at, id', [workspaceId]);
      return found.rows.map(toWebhook);
    },

    setEnabled(id, enabled, reason) {
      return inTransaction(pool, async (client) => {
        // A webhook switched back on starts counting failures afresh.
        const changed = await client.query(
          `UPDATE csr_webhooks SET enabled = $2, disabled_reason = $3,
             consecutive_failures = CASE WHEN $2 THEN 0 ELSE consecutive_failures END
           WHERE id = $1`,
          [id, enabled, enabled ? null : reason],
        );
        if (changed.rowCount === 0) return null;
        // Off skips what is waiting; on skips what was enqueued while off (judged before the switch-off).
        await client.query(`UPDATE csr_deliveries SET status = 'skipped', next_attempt_at = NULL, claimed_until = NULL WHERE webhook_id = $1 AND ${PENDING}`, [id]);
        return webhookIn(client, id);
      });
    },

    async setSecret(id, secret) {
      const changed = await pool.query<WebhookRow>('UPDATE csr_webhooks SET secret = $2 WHERE id = $1 RETURNING *', [id, secret]);
      return changed.rows[0] ? toWebhook(changed.rows[0]) : null;
    },

    async updateWebhook(id, changes) {
      const changed = await pool.query<WebhookRow>('UPDATE csr_webhooks SET name = $2, url = $3, events = $4, objects = $5 WHERE id = $1 RETURNING *', [
        id,
        changes.name,
        changes.url,
        JSON.stringify(changes.events),
        JSON.stringify(changes.objects),
      ]);
      return changed.rows[0] ? toWebhook(changed.rows[0]) : null;
    },

    deleteWebhook(id) {
      return inTransaction(pool, async (client) => {
        const removed = await client.query<WebhookRow>('DELETE FROM csr_webhooks WHERE id = $1 RETURNING *', [id]);
        if (!removed.rows[0]) return null;
        await client.query('DELETE FROM csr_deliveries WHERE webhook_id = $1', [id]);
        return toWebhook(removed.rows[0]);
      });
    },

    enqueue(items, at, options) {
      return inTransaction(pool, (client) => enqueueIn(client, items, at, options?.claimedUntil ?? null));
    },

    async claimDue(now, leaseUntil, limit, quota, options) {
      const enabled = await pool.query<WebhookRow>('SELECT * FROM csr_webhooks WHERE enabled');
      const webhooks = enabled.rows.map(toWebhook).filter((webhook) => claimableBy(webhook, options?.listener));
      const claimed: ClaimedDelivery[] = [];
      // Start at a different webhook each time, so that a full batch does not always favour the first ones.
      const start = webhooks.length === 0 ? 0 : Math.floor(Math.random() * webhooks.length);
      for (let i = 0; i < webhooks.length && claimed.length < limit; i++) {
        const webhook = webhooks[(start + i) % webhooks.length]!;
        const take = Math.min(Math.floor(quota(webhook.id)), limit - claimed.length);
        if (take > 0) claimed.push(...(await claimOf(webhook, now, leaseUntil, take)));
      }
      return claimed;
    },

    settle(outcomes) {
      return inTransaction(pool, async (client) => {
        const touched = new Set<string>();
        // One order for every dispatcher, so that two settling at once cannot lock webhooks in a circle.
        const ordered = [...outcomes].sort((a, b) => (a.webhookId < b.webhookId ? -1 : a.webhookId > b.webhookId ? 1 : a.deliveryId - b.deliveryId));
        for (const outcome of ordered) {
          const changed = await client.query(
            `UPDATE csr_deliveries SET status = $2, attempts = $3, response_code = $4, error = $5, last_attempt_at = $6, next_attempt_at = $7,
               last_sent_at = $8, last_signature = $9, claimed_until = NULL
             WHERE id = $1 AND ${PENDING}`,
            [outcome.deliveryId, outcome.status, outcome.attempts, outcome.responseCode, outcome.error, outcome.lastAttemptAt, outcome.nextAttemptAt, outcome.sentAt, outcome.signature],
          );
          if (changed.rowCount === 0) continue;
          if (outcome.succeeded) {
            await client.query(
              'UPDATE csr_webhooks SET consecutive_failures = 0, last_success_at = GREATEST(COALESCE(last_success_at, $2), $2) WHERE id = $1',
              [outcome.webhookId, outcome.lastAttemptAt],
            );
          } else {
            await client.query('UPDATE csr_webhooks SET consecutive_failures = consecutive_failures + 1 WHERE id = $1', [outcome.webhookId]);
          }
          touched.add(outcome.webhookId);
        }
        const webhooks: Webhook[] = [];
        for (const id of touched) {
          const webhook = await webhookIn(client, id);
          if (webhook) webhooks.push(webhook);
        }
        return webhooks;
      });
    },

    async deliveries(webhookId, limit) {
      const count = Math.floor(limit);
      if (!(count > 0)) return [];
      const found = await pool.query<DeliveryRow>('SELECT * FROM csr_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2', [webhookId, count]);
      return found.rows.map(toDelivery);
    },

    async deliveryById(id) {
      if (!Number.isSafeInteger(id)) return null;
      const found = await pool.query<DeliveryRow>('SELECT * FROM csr_deliveries WHERE id = $1', [id]);
      return found.rows[0] ? toDelivery(found.rows[0]) : null;
    },

    async deliveriesOfEvents(webhookId, eventIds) {
      if (eventIds.length === 0) return [];
      const found = await pool.query<DeliveryRow>('SELECT * FROM csr_deliveries WHERE webhook_id = $1 AND event_id = ANY($2::text[]) ORDER BY id', [
        webhookId,
        eventIds,
      ]);
      return found.rows.map(toDelivery);
    },

    async payloadById(id) {
      const found = await pool.query<PayloadRow>('SELECT * FROM csr_webhook_payloads WHERE id = $1', [id]);
      return found.rows[0] ? toPayload(found.rows[0]) : null;
    },

    redactPayloads(workspaceId, recordIds, fields) {
      const ids = new Set(recordIds);
      const keys = new Set(fields);
      if (ids.size === 0) return Promise.resolve(0);
      return inTransaction(pool, async (client) => {
        // The text search only narrows the rows down; redactPayloadData decides what is the record's.
        const found = await client.query<{ id: string; data: string }>(
          'SELECT id, data FROM csr_webhook_payloads WHERE workspace_id = $1 AND EXISTS (SELECT 1 FROM unnest($2::text[]) r WHERE strpos(data, r) > 0) FOR UPDATE',
          [workspaceId, [...ids]],
        );
        let count = 0;
        for (const row of found.rows) {
          const redacted = redactPayloadData(JSON.parse(row.data), ids, keys);
          if (redacted === null) continue;
          count += (await client.query('UPDATE csr_webhook_payloads SET data = $2 WHERE id = $1', [row.id, JSON.stringify(redacted)])).rowCount ?? 0;
        }
        return count;
      });
    },

    redeliver(items: Redelivery[], at, options) {
      return inTransaction(pool, async (client) => {
        const created: Delivery[] = [];
        for (const { payload, webhookId, cause, originalId } of items) {
          await insertPayload(client, payload);
          const row = await client.query<DeliveryRow>(
            `INSERT INTO csr_deliveries (webhook_id, event_id, event, status, created_at, next_attempt_at, claimed_until, cause, original_id)
             VALUES ($1, $2, $3, 'waiting', $4, $4, $5, $6, $7) RETURNING *`,
            [webhookId, payload.id, payload.event, at, options?.claimedUntil ?? null, cause, originalId],
          );
          created.push(toDelivery(row.rows[0]!));
        }
        return created;
      });
    },

    async addBulkMembers(members) {
      if (members.length === 0) return;
      await pool.query(
        `INSERT INTO csr_bulk_members (event_id, workspace_id, action_id, object, kind, record_id, source, occurred_at, position, action_count)
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS m ("eventId" text, "workspaceId" text, "actionId" text, object text, kind text,
           "recordId" text, source text, "occurredAt" text, position text, "actionCount" integer)
         ON CONFLICT (event_id) DO NOTHING`,
        [JSON.stringify(members)],
      );
    },

    async bulkGroups() {
      // Read as PendingMember (../bulkGroups.ts), in the order its grouping needs.
      const pending = await pool.query<PendingMember>(
        `SELECT m.event_id AS "eventId", m.workspace_id AS "workspaceId", m.action_id AS "actionId", m.object, m.kind, m.record_id AS "recordId",
                m.source, m.occurred_at AS "occurredAt", m.action_count AS "actionCount",
                (SELECT count(*)::int FROM csr_bulk_members a WHERE a.action_id = m.action_id AND a.object = m.object) AS "seenForObject"
         FROM csr_bulk_members m WHERE m.bulk_id IS NULL ORDER BY m.action_id, m.object, m.kind, m.position`,
      );
      return groupPendingMembers(pending.rows);
    },

    async flushBulk(eventIds, payload, webhookIds, at) {
      return inTransaction(pool, async (client) => {
        const marked = await client.query('UPDATE csr_bulk_members SET bulk_id = $1 WHERE event_id = ANY($2::text[]) AND bulk_id IS NULL', [payload.id, eventIds]);
        // Another dispatcher sent one of the members first: nothing of this flush is kept.
        if (marked.rowCount !== new Set(eventIds).size) throw new AlreadySent();
        await enqueueIn(client, [{ payload, webhookIds }], at, null);
        return true;
      }).catch((error: unknown) => {
        if (error instanceof AlreadySent) return false;
        throw error;
      });
    },

    purge(before) {
      return inTransaction(pool, async (client) => {
        const deleted = await client.query('DELETE FROM csr_deliveries WHERE created_at < $1', [before]);
        await client.query('DELETE FROM csr_webhook_payloads p WHERE NOT EXISTS (SELECT 1 FROM csr_deliveries d WHERE d.event_id = p.id)');
        await client.query('DELETE FROM csr_bulk_members WHERE bulk_id IS NOT NULL AND occurred_at < $1', [before]);
        return deleted.rowCount ?? 0;
      });
    },

    async deliveryStats(now): Promise<DeliveryStats> {
      // One statement, so one snapshot: the counts and the oldest pending agree.
      const found = await pool.query<{ by_status: Record<string, number> | null; in_flight: number; oldest: string | null }>(
        `SELECT (SELECT json_object_agg(status, n) FROM (SELECT status, count(*)::int AS n FROM csr_deliveries GROUP BY status) s) AS by_status,
                (SELECT count(*)::int FROM csr_deliveries WHERE ${PENDING} AND claimed_until > $1) AS in_flight,
                (SELECT min(created_at) FROM csr_deliveries WHERE ${PENDING}) AS oldest`,
        [now],
      );
      const row = found.rows[0]!;
      const byStatus: Record<DeliveryStatus, number> = { waiting: 0, retrying: 0, delivered: 0, failed: 0, skipped: 0 };
      for (const [status, n] of Object.entries(row.by_status ?? {})) byStatus[status as DeliveryStatus] = n;
      return { byStatus, inFlight: row.in_flight, retrying: byStatus.retrying, oldestPendingAt: row.oldest };
    },

    // The pool is the process's, shared by every adapter: its owner ends it.
    async close() {},
  });
}

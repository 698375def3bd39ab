import type Database from 'better-sqlite3';
import { BOUND_COUNT, BOUND_VALUE } from '../../sqlite/file.js';

/** The statements of the embedded webhook store, prepared once per connection. */
export function prepare(db: Database.Database) {
  return {
    insertWebhook: db.prepare(
      `INSERT INTO webhooks (id, workspace_id, name, url, events, objects, enabled, disabled_reason, secret, created_at, consecutive_failures, last_success_at, listener)
       VALUES (@id, @workspaceId, @name, @url, @events, @objects, @enabled, @disabledReason, @secret, @createdAt, @consecutiveFailures, @lastSuccessAt, @listener)`,
    ),
    webhookById: db.prepare('SELECT * FROM webhooks WHERE id = ?'),
    listWebhooks: db.prepare(`SELECT * FROM webhooks WHERE workspace_id = ${BOUND_VALUE} ORDER BY created_at, id`),
    enabledWebhooks: db.prepare('SELECT * FROM webhooks WHERE enabled = 1'),
    setEnabled: db.prepare('UPDATE webhooks SET enabled = ?, disabled_reason = ? WHERE id = ?'),
    deleteWebhook: db.prepare('DELETE FROM webhooks WHERE id = ?'),
    deleteDeliveries: db.prepare('DELETE FROM deliveries WHERE webhook_id = ?'),
    resetFailures: db.prepare('UPDATE webhooks SET consecutive_failures = 0 WHERE id = ?'),
    setSecret: db.prepare('UPDATE webhooks SET secret = ? WHERE id = ?'),
    updateWebhook: db.prepare('UPDATE webhooks SET name = ?, url = ?, events = ?, objects = ? WHERE id = ?'),
    skipWaiting: db.prepare(
      "UPDATE deliveries SET status = 'skipped', next_attempt_at = NULL, claimed_until = NULL WHERE webhook_id = ? AND status IN ('waiting', 'retrying')",
    ),
    webhookSucceeded: db.prepare('UPDATE webhooks SET consecutive_failures = 0, last_success_at = max(coalesce(last_success_at, @at), @at) WHERE id = @id'),
    webhookFailed: db.prepare('UPDATE webhooks SET consecutive_failures = consecutive_failures + 1 WHERE id = ?'),

    insertPayload: db.prepare(
      `INSERT INTO payloads (id, workspace_id, event, object, source, occurred_at, data)
       VALUES (@id, @workspaceId, @event, @object, @source, @occurredAt, @data) ON CONFLICT (id) DO NOTHING`,
    ),
    payloadById: db.prepare('SELECT * FROM payloads WHERE id = ?'),
    payloadsMentioning: db.prepare('SELECT id, data FROM payloads WHERE workspace_id = ? AND instr(data, ?) > 0'),
    setPayloadData: db.prepare('UPDATE payloads SET data = ? WHERE id = ?'),
    insertDelivery: db.prepare(
      `INSERT INTO deliveries (webhook_id, event_id, event, status, created_at, next_attempt_at, claimed_until)
       VALUES (@webhookId, @eventId, @event, 'waiting', @at, @at, @claimedUntil) ON CONFLICT (webhook_id, event_id) WHERE cause IS NULL DO NOTHING RETURNING *`,
    ),
    insertRedelivery: db.prepare(
      `INSERT INTO deliveries (webhook_id, event_id, event, status, created_at, next_attempt_at, claimed_until, cause, original_id)
       VALUES (@webhookId, @eventId, @event, 'waiting', @at, @at, @claimedUntil, @cause, @originalId) RETURNING *`,
    ),
    dueOf: db.prepare(
      `SELECT * FROM deliveries WHERE webhook_id = ${BOUND_VALUE} AND status IN ('waiting', 'retrying') AND next_attempt_at <= ${BOUND_VALUE}
         AND (claimed_until IS NULL OR claimed_until <= ${BOUND_VALUE}) ORDER BY next_attempt_at, id LIMIT ${BOUND_COUNT}`,
    ),
    claimDelivery: db.prepare('UPDATE deliveries SET claimed_until = ? WHERE id = ?'),
    settleDelivery: db.prepare(
      `UPDATE deliveries SET status = @status, attempts = @attempts, response_code = @responseCode, error = @error,
         last_attempt_at = @lastAttemptAt, next_attempt_at = @nextAttemptAt, last_sent_at = @sentAt, last_signature = @signature, claimed_until = NULL
       WHERE id = @deliveryId AND status IN ('waiting', 'retrying')`,
    ),
    deliveriesOf: db.prepare(`SELECT * FROM deliveries WHERE webhook_id = ${BOUND_VALUE} ORDER BY id DESC LIMIT ${BOUND_COUNT}`),
    deliveryById: db.prepare('SELECT * FROM deliveries WHERE id = ?'),
    deliveriesOfEvents: db.prepare(`SELECT * FROM deliveries WHERE webhook_id = ${BOUND_VALUE} AND event_id IN (SELECT value FROM json_each(?)) ORDER BY id`),

    insertMember: db.prepare(
      `INSERT INTO bulk_members (event_id, workspace_id, action_id, object, kind, record_id, source, occurred_at, position, action_count)
       VALUES (@eventId, @workspaceId, @actionId, @object, @kind, @recordId, @source, @occurredAt, @position, @actionCount)
       ON CONFLICT (event_id) DO NOTHING`,
    ),
    // Read as PendingMember (../bulkGroups.ts), in the order its grouping needs.
    pendingMembers: db.prepare(
      `SELECT m.event_id AS eventId, m.workspace_id AS workspaceId, m.action_id AS actionId, m.object, m.kind, m.record_id AS recordId,
              m.source, m.occurred_at AS occurredAt, m.action_count AS actionCount,
              (SELECT count(*) FROM bulk_members a WHERE a.action_id = m.action_id AND a.object = m.object) AS seenForObject
       FROM bulk_members m WHERE m.bulk_id IS NULL ORDER BY m.action_id, m.object, m.kind, m.position`,
    ),
    markMember: db.prepare('UPDATE bulk_members SET bulk_id = ? WHERE event_id = ? AND bulk_id IS NULL'),

    purgeDeliveries: db.prepare('DELETE FROM deliveries WHERE created_at < ?'),
    purgePayloads: db.prepare('DELETE FROM payloads WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = payloads.id)'),
    purgeMembers: db.prepare('DELETE FROM bulk_members WHERE bulk_id IS NOT NULL AND occurred_at < ?'),
  };
}

import { redactPayloadData } from '../redact.js';
import type Database from 'better-sqlite3';
import { claimableBy } from '../policy.js';
import { changeSchema, BOUND_COUNT, BOUND_VALUE, openSqliteFile } from '../../sqlite/file.js';
import type {
  AttemptOutcome,
  BulkGroup,
  ClaimedDelivery,
  Delivery,
  DeliveryCause,
  DeliveryStats,
  DeliveryStatus,
  Redelivery,
  EventKind,
  Webhook,
  WebhookPayload,
  WebhookStore,
} from '../port.js';

/**
 * The embedded webhook store (better-sqlite3, `webhooks.db`). Deliveries cannot be rebuilt once
 * their event is acknowledged on the subscription, so every commit is fsynced. The `csr` tool
 * writes webhooks (and sends test events) in the same file while the dispatcher runs.
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhooks (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  objects TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  disabled_reason TEXT,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  last_success_at TEXT,
  listener INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS webhooks_by_workspace ON webhooks (workspace_id, created_at);

CREATE TABLE IF NOT EXISTS payloads (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  event TEXT NOT NULL,
  object TEXT,
  source TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  data TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event TEXT NOT NULL,
  status TEXT NOT NULL,
  response_code INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  created_at TEXT NOT NULL,
  last_attempt_at TEXT,
  next_attempt_at TEXT,
  claimed_until TEXT,
  cause TEXT,
  original_id INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS deliveries_fan_out_unique ON deliveries (webhook_id, event_id) WHERE cause IS NULL;
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (webhook_id, next_attempt_at) WHERE status IN ('waiting', 'retrying');
CREATE INDEX IF NOT EXISTS deliveries_by_webhook ON deliveries (webhook_id, id);
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE INDEX IF NOT EXISTS deliveries_by_event ON deliveries (event_id);

CREATE TABLE IF NOT EXISTS bulk_members (
  event_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  action_id TEXT NOT NULL,
  object TEXT NOT NULL,
  kind TEXT NOT NULL,
  record_id TEXT NOT NULL,
  source TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  position TEXT NOT NULL,
  action_count INTEGER NOT NULL,
  bulk_id TEXT
);
CREATE INDEX IF NOT EXISTS bulk_members_pending ON bulk_members (action_id, object, kind, position) WHERE bulk_id IS NULL;
CREATE INDEX IF NOT EXISTS bulk_members_by_action ON bulk_members (action_id, object);
`;

interface WebhookRow {
  id: string;
  workspace_id: string;
  name: string;
  url: string;
  events: string;
  objects: string;
  enabled: number;
  disabled_reason: string | null;
  secret: string;
  created_at: string;
  consecutive_failures: number;
  last_success_at: string | null;
  listener: number;
}

interface DeliveryRow {
  id: number;
  webhook_id: string;
  event_id: string;
  event: string;
  status: DeliveryStatus;
  response_code: number | null;
  attempts: number;
  error: string | null;
  created_at: string;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  cause: DeliveryCause | null;
  original_id: number | null;
}

interface PayloadRow {
  id: string;
  workspace_id: string;
  event: string;
  object: string | null;
  source: string;
  occurred_at: string;
  data: string;
}

interface MemberRow {
  event_id: string;
  workspace_id: string;
  action_id: string;
  object: string;
  kind: EventKind;
  record_id: string;
  source: string;
  occurred_at: string;
  action_count: number;
  seen_for_object: number;
}

/** Rolls a bulk flush back: another dispatcher sent one of its members first. */
class AlreadySent extends Error {}

function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    url: row.url,
    events: JSON.parse(row.events) as Webhook['events'],
    objects: JSON.parse(row.objects) as Webhook['objects'],
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    secret: row.secret,
    createdAt: row.created_at,
    consecutiveFailures: row.consecutive_failures,
    lastSuccessAt: row.last_success_at,
    ...(row.listener === 1 ? { listener: true as const } : {}),
  };
}

function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    event: row.event,
    status: row.status,
    responseCode: row.response_code,
    attempts: row.attempts,
    error: row.error,
    createdAt: row.created_at,
    lastAttemptAt: row.last_attempt_at,
    nextAttemptAt: row.next_attempt_at,
    cause: row.cause ?? null,
    originalId: row.original_id ?? null,
  };
}

function toPayload(row: PayloadRow): WebhookPayload {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    event: row.event,
    object: row.object,
    source: row.source,
    occurredAt: row.occurred_at,
    data: JSON.parse(row.data) as unknown,
  };
}

export function openSqliteWebhookStore(options: { path: string }): WebhookStore {
  const db = openSqliteFile(options.path, { synchronous: 'FULL' });
  changeSchema(db, () => {
    migrateDeliveries(db);
    addListenerColumn(db);
    db.exec(SCHEMA);
  });
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
      return groupMembers(s.pendingMembers.all() as MemberRow[]);
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

/**
 * Stores made before resends had deliveries unique per (webhook, event) for every row; SQLite
 * cannot drop a table constraint, so such a table is copied once into the current shape (ids and
 * the id sequence kept, so X-SVC-Delivery values are never reused).
 */
function migrateDeliveries(db: Database.Database): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('deliveries')").all() as { name: string }[];
  if (columns.length === 0 || columns.some((column) => column.name === 'cause')) return;
  // Inside the store's schema transaction (changeSchema): all of it or none.
  db.exec('ALTER TABLE deliveries RENAME TO deliveries_before_causes');
  db.exec(SCHEMA);
  db.exec(
    `INSERT INTO deliveries (id, webhook_id, event_id, event, status, response_code, attempts, error, created_at, last_attempt_at, next_attempt_at, claimed_until)
     SELECT id, webhook_id, event_id, event, status, response_code, attempts, error, created_at, last_attempt_at, next_attempt_at, claimed_until FROM deliveries_before_causes`,
  );
  const old = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'deliveries_before_causes'").get() as { seq: number } | undefined;
  if (old) db.prepare("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'deliveries'").run(old.seq);
  db.exec('DROP TABLE deliveries_before_causes');
}

/** A `webhooks.db` made before listen sessions gets their column (0: an ordinary webhook). */
function addListenerColumn(db: Database.Database): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info('webhooks')").all() as { name: string }[];
  if (columns.length === 0 || columns.some((column) => column.name === 'listener')) return;
  db.exec('ALTER TABLE webhooks ADD COLUMN listener INTEGER NOT NULL DEFAULT 0');
}

/** Rows in (action, object, kind, position) order -> one group per (action, object, kind). */
function groupMembers(rows: MemberRow[]): BulkGroup[] {
  const groups: BulkGroup[] = [];
  let current: BulkGroup | undefined;
  for (const row of rows) {
    if (!current || current.actionId !== row.action_id || current.object !== row.object || current.kind !== row.kind) {
      current = {
        workspaceId: row.workspace_id,
        actionId: row.action_id,
        object: row.object,
        kind: row.kind,
        source: row.source,
        actionCount: row.action_count,
        seenForObject: row.seen_for_object,
        members: [],
      };
      groups.push(current);
    }
    current.members.push({ eventId: row.event_id, recordId: row.record_id, occurredAt: row.occurred_at });
  }
  return groups;
}

function prepare(db: Database.Database) {
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
         last_attempt_at = @lastAttemptAt, next_attempt_at = @nextAttemptAt, claimed_until = NULL
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
    pendingMembers: db.prepare(
      `SELECT m.*, (SELECT count(*) FROM bulk_members a WHERE a.action_id = m.action_id AND a.object = m.object) AS seen_for_object
       FROM bulk_members m WHERE m.bulk_id IS NULL ORDER BY m.action_id, m.object, m.kind, m.position`,
    ),
    markMember: db.prepare('UPDATE bulk_members SET bulk_id = ? WHERE event_id = ? AND bulk_id IS NULL'),

    purgeDeliveries: db.prepare('DELETE FROM deliveries WHERE created_at < ?'),
    purgePayloads: db.prepare('DELETE FROM payloads WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = payloads.id)'),
    purgeMembers: db.prepare('DELETE FROM bulk_members WHERE bulk_id IS NOT NULL AND occurred_at < ?'),
  };
}

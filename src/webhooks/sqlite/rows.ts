import type { Delivery, DeliveryCause, DeliveryStatus, Webhook } from '../port.js';

/** The rows of `webhooks.db` as better-sqlite3 returns them, and their port values. */

export interface WebhookRow {
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

export interface DeliveryRow {
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
  last_sent_at: string | null;
  last_signature: string | null;
}


export function toWebhook(row: WebhookRow): Webhook {
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

export function toDelivery(row: DeliveryRow): Delivery {
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
    lastSentAt: row.last_sent_at ?? null,
    lastSignature: row.last_signature ?? null,
    cause: row.cause ?? null,
    originalId: row.original_id ?? null,
  };
}

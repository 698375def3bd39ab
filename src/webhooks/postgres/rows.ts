import type { Delivery, DeliveryCause, DeliveryStatus, Webhook } from '../port.js';

/** The rows of the PostgreSQL webhook store as `pg` returns them, and their port values. */

export interface WebhookRow {
  id: string;
  workspace_id: string;
  name: string;
  url: string;
  events: Webhook['events'];
  objects: Webhook['objects'];
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  created_at: string;
  consecutive_failures: number;
  last_success_at: string | null;
  listener: boolean;
}

export interface DeliveryRow {
  /** bigint: `pg` answers it as text. */
  id: string;
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
  original_id: string | null;
  last_sent_at: string | null;
  last_signature: string | null;
}


export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    url: row.url,
    events: row.events,
    objects: row.objects,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    secret: row.secret,
    createdAt: row.created_at,
    consecutiveFailures: row.consecutive_failures,
    lastSuccessAt: row.last_success_at,
    ...(row.listener ? { listener: true as const } : {}),
  };
}

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: Number(row.id),
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
    lastSentAt: row.last_sent_at,
    lastSignature: row.last_signature,
    cause: row.cause,
    originalId: row.original_id === null ? null : Number(row.original_id),
  };
}

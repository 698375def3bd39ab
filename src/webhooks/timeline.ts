import type { RecordedEvent } from '../eventstore/port.js';
import type { EventKind, Webhook } from './port.js';

/**
 * A workspace's webhook configuration as the log tells it (the `workspace-<id>` stream), so that
 * the fan-out decides by log order, not by when it happens to run: a record change at position P
 * goes to a webhook that existed and was on at P and has not been switched off since (spec 3.2:
 * switching off skips what is waiting, and changes made while off are never sent later). The
 * question is asked "as of P" rather than of a view kept in subscription order, because competing
 * consumers and retried events reach the fan-out out of order.
 *
 * Secrets are not in the timeline: a delivery is signed with the secret current when it is sent
 * (spec 6.1: after a rotation "the old one stops working immediately", and retries of an older
 * change must verify with the secret the receiver now holds).
 */

export const WEBHOOK_EVENT_TYPES = ['WebhookCreated', 'WebhookChanged', 'WebhookSwitchedOn', 'WebhookSwitchedOff', 'WebhookDeleted'] as const;
type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface TimelineEntry {
  position: string;
  webhookId: string;
  type: WebhookEventType;
  events?: Webhook['events'];
  objects?: Webhook['objects'];
  reason?: string;
}

/** The webhook configuration changes among a stream's events, in log order. */
export function timelineOf(events: RecordedEvent[]): TimelineEntry[] {
  return events.flatMap((event) => {
    const entry = timelineEntry(event);
    return entry ? [entry] : [];
  });
}

export function timelineEntry(event: RecordedEvent): TimelineEntry | null {
  if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event.type)) return null;
  const data = event.data as { webhookId?: unknown; events?: Webhook['events']; objects?: Webhook['objects']; reason?: unknown };
  if (typeof data.webhookId !== 'string') return null;
  return {
    position: event.position,
    webhookId: data.webhookId,
    type: event.type as WebhookEventType,
    ...(event.type === 'WebhookCreated' || event.type === 'WebhookChanged' ? { events: data.events ?? 'all', objects: data.objects ?? 'all' } : {}),
    ...(typeof data.reason === 'string' ? { reason: data.reason } : {}),
  };
}

export interface LoggedWebhook {
  id: string;
  events: Webhook['events'];
  objects: Webhook['objects'];
}

/** The webhooks a change at `position` of `object` and `kind` goes to, by the log alone. */
export function recipientsAt(timeline: TimelineEntry[], position: string, object: string, kind: EventKind): string[] {
  const state = new Map<string, { hook: LoggedWebhook; on: boolean; offSince: boolean }>();
  for (const entry of timeline) {
    const before = entry.position < position;
    if (entry.type === 'WebhookCreated') {
      if (before) state.set(entry.webhookId, { hook: { id: entry.webhookId, events: entry.events!, objects: entry.objects! }, on: true, offSince: false });
      continue;
    }
    const current = state.get(entry.webhookId);
    if (!current) continue;
    // New filters apply to changes made after the edit; what was decided before keeps its recipients.
    if (entry.type === 'WebhookChanged') {
      if (before) current.hook = { id: entry.webhookId, events: entry.events!, objects: entry.objects! };
      continue;
    }
    // A deleted webhook is off for good: from its deletion on, and for what was waiting.
    if (before) current.on = entry.type === 'WebhookSwitchedOn';
    else if (entry.type === 'WebhookSwitchedOff' || entry.type === 'WebhookDeleted') current.offSince = true;
  }
  return [...state.values()]
    .filter(({ hook, on, offSince }) => on && !offSince && matches(hook, object, kind))
    .map(({ hook }) => hook.id);
}

function matches(hook: LoggedWebhook, object: string, kind: EventKind): boolean {
  return (hook.objects === 'all' || hook.objects.includes(object)) && (hook.events === 'all' || hook.events.includes(kind));
}

/** Whether the log says a webhook is on now, and why not when it is off (null when the log does not know it). */
export function latestState(timeline: TimelineEntry[], webhookId: string): { enabled: boolean; reason: string | null } | null {
  let state: { enabled: boolean; reason: string | null } | null = null;
  for (const entry of timeline) {
    if (entry.webhookId !== webhookId || entry.type === 'WebhookChanged') continue;
    if (entry.type === 'WebhookCreated' || entry.type === 'WebhookSwitchedOn') state = { enabled: true, reason: null };
    else state = { enabled: false, reason: entry.reason ?? ADMIN_SWITCH_OFF_REASON };
  }
  return state;
}

export const ADMIN_SWITCH_OFF_REASON = 'switched off by an administrator';

import type { WebhookPayload } from './port.js';

/**
 * The JSON body of a record event as a receiver reads it (spec 6.3), in one place: a delivery
 * adds this attempt's `sentAt`; the change feed (changeFeed.ts) lists the same body without it,
 * so a client reading both sees one shape and one event id per change.
 */
export function eventBody(payload: WebhookPayload, sentAt?: string): Record<string, unknown> {
  return {
    id: payload.id,
    event: payload.event,
    object: payload.object,
    source: payload.source,
    occurredAt: payload.occurredAt,
    ...(sentAt === undefined ? {} : { sentAt }),
    data: payload.data,
  };
}

import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/eventstore/port.js';

/** An event whose data is a text of `size` characters: what the embedded store's size limits are tested with. */
export function sizedEvent(size: number): NewEvent {
  const actionId = randomUUID();
  return { id: randomUUID(), type: 'Noted', data: { text: 'x'.repeat(size) }, metadata: { source: 'api', actor: { type: 'system', id: 't', name: 't' }, actionId, correlationId: actionId, causationId: actionId } };
}

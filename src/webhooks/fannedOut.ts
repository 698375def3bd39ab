import type { EventStore } from '../eventstore/port.js';
import { comparePositions, type Position } from '../eventstore/position.js';
import { WEBHOOKS_GROUP } from './port.js';

const POLL_MS = 50;

/**
 * Waits until the webhook fan-out has stored the deliveries of every event up to `position`
 * (its group has settled them), for as long as a fan-out may be running. An erasure waits for
 * this before it redacts stored payloads: a batch the fan-out rendered before the read model
 * showed the erasure is then stored before the redaction, never after it (docs/privacy.md).
 * Answers false when the fan-out did not get there within `timeoutMs` (far behind, or stuck).
 */
export async function waitFannedOut(
  events: Pick<EventStore, 'groupCheckpoint'>,
  position: Position,
  options: { running: () => boolean; timeoutMs: number },
): Promise<boolean> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const group = await events.groupCheckpoint(WEBHOOKS_GROUP);
    // No group: no fan-out ever ran on this store, so none is building a delivery.
    if (group === null) return true;
    if (group.position !== null && comparePositions(group.position, position) >= 0) return true;
    // No server on this store: nothing is rendering now, and a later start renders from the erased read model.
    if (!options.running()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

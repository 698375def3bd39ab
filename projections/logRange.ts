import type { EventFilter, EventStore, RecordedEvent } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';

/** How long the log may have nothing ready before a read counts as having reached its end. */
export const IDLE_MS = 100;

/**
 * The events `filter` takes after `from`, up to and including `to`. A catch-up subscription
 * turns live at the end of the log and would wait there for more: the read also ends when the
 * log has had nothing ready for IDLE_MS (`to` may be an event of a stream the filter leaves out).
 */
export async function* eventsUpTo(events: EventStore, from: Position | null, filter: EventFilter, to: Position): AsyncGenerator<RecordedEvent> {
  const subscription = events.subscribeToAll({ from: from ?? 'start', filter });
  const iterator = subscription[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      const next = iterator.next();
      const idle = new Promise<null>((resolve) => (timer = setTimeout(resolve, IDLE_MS, null)));
      const result = await Promise.race([next, idle]);
      clearTimeout(timer);
      if (result === null) {
        next.catch(() => undefined);
        return;
      }
      if (result.done || result.value.position > to) return;
      yield result.value;
      if (result.value.position === to) return;
    }
  } finally {
    clearTimeout(timer);
    await subscription.close();
  }
}

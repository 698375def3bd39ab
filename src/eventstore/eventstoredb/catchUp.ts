import { START } from '@eventstore/db-client';
import type { AllStreamResolvedEvent, AllStreamSubscription } from '@eventstore/db-client';
import type { RecordedEvent, SubscribeToAllOptions, Subscription } from '../port.js';
import type { Position } from '../position.js';
import { Control, release, tracked, type SubscriptionContext } from './control.js';
import { backoffDelay, classifySubscriptionError, isAfter, matchesFilter, toEsdbPosition, toRecordedEvent, toServerFilter } from './mapping.js';

/**
 * The catch-up subscription of the EventStoreDB adapter: it remembers the position of the last
 * event it handed out, and when the call fails because the server went away it resubscribes from
 * there after a backoff, so nothing is skipped and nothing already handed out is repeated.
 */

export function subscribeToAll(ctx: SubscriptionContext, subscribeOptions: SubscribeToAllOptions): Subscription {
  const { client, logger, open } = ctx;
  ctx.assertOpen();
  const serverFilter = toServerFilter(subscribeOptions.filter);
  const control = new Control();
  let last: Position | 'start' = subscribeOptions.from;
  let current: AllStreamSubscription | null = null;

  async function* events(): AsyncGenerator<RecordedEvent> {
    let attempt = 0;
    while (!control.closed) {
      const sub = client.subscribeToAll({
        fromPosition: last === 'start' ? START : toEsdbPosition(last),
        resolveLinkTos: false,
        filter: serverFilter,
      });
      current = sub;
      try {
        for await (const resolved of sub as AsyncIterable<AllStreamResolvedEvent>) {
          attempt = 0;
          // Checkpoint-only items, system events and events outside the filter carry nothing for us.
          const event = toRecordedEvent(resolved);
          if (event === null || !matchesFilter(event, subscribeOptions.filter) || !isAfter(event.position, last)) continue;
          last = event.position;
          yield event;
          if (control.closed) return;
        }
        if (control.closed) return;
        logger?.warn({ from: last }, 'EventStoreDB subscription ended by the server; resubscribing');
      } catch (error) {
        if (control.closed) return;
        if (classifySubscriptionError(error) !== 'transient') throw error;
        logger?.warn({ err: error, from: last, attempt }, 'EventStoreDB subscription dropped; resubscribing');
      } finally {
        current = null;
        await release(sub);
      }
      await control.sleep(backoffDelay(attempt++));
    }
  }

  const { iterator, close } = tracked(open, control, events, async () => {
    if (current) await release(current);
  });
  return { [Symbol.asyncIterator]: () => iterator, close };
}

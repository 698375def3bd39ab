import type { Logger } from 'pino';
import type { EventFilter, EventStore, RecordedEvent } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { readyBatches } from '../src/eventstore/readyBatches.js';
import type { ReadStore } from '../src/readstore/port.js';

/**
 * Reactors: projections that append events instead of writing a read model (roll-ups, automation,
 * health score). The same catch-up subscription from a checkpoint as the projection runner, the
 * checkpoint kept beside the projections' (so status and rebuilds see it). Appends and checkpoint
 * cannot commit together (the log and the read store are two stores), so a crash between them
 * hands the batch out again: `react` must make a replayed event a no-op, e.g. by deciding on the
 * target stream's own state, which already holds the first reaction.
 */

export interface Reactor {
  name: string;
  filter: EventFilter;
  /** Returns only once every reaction to `events` is appended, with the position of the last one (null: none). */
  react(events: RecordedEvent[], stopped: () => boolean): Promise<Position | null>;
}

export interface RunningReactor {
  stop(): Promise<void>;
}

/**
 * Beside its checkpoint, a reactor keeps the position of the last event it appended: a writer that
 * waits for the reactions to its write (read your writes) waits for the read models to pass it.
 */
export function appendedCheckpoint(reactor: string): string {
  return `${reactor}.appended`;
}

const MAX_BATCH = 500;
const RETRY_DELAY_MS = 1000;

export function startReactor(deps: { events: EventStore; readStore: ReadStore; logger: Logger }, reactor: Reactor): RunningReactor {
  const logger = deps.logger.child({ reactor: reactor.name });
  let stopped = false;
  let subscription: ReturnType<EventStore['subscribeToAll']> | undefined;

  const run = async (): Promise<void> => {
    while (!stopped) {
      try {
        const from = (await deps.readStore.checkpoint(reactor.name)) ?? 'start';
        subscription = deps.events.subscribeToAll({ from, filter: reactor.filter });
        for await (const batch of readyBatches(subscription, MAX_BATCH)) {
          const appended = await reactor.react(batch, () => stopped);
          if (stopped) break;
          await deps.readStore.transaction(async (tx) => {
            await tx.setCheckpoint(reactor.name, batch.at(-1)!.position);
            if (appended) await tx.setCheckpoint(appendedCheckpoint(reactor.name), appended);
          });
        }
      } catch (error) {
        if (stopped) break;
        logger.error({ err: error }, 'reactor failed; resuming from its checkpoint');
        await subscription?.close().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
      }
    }
  };
  const running = run();

  return {
    async stop() {
      stopped = true;
      await subscription?.close();
      await running;
    },
  };
}

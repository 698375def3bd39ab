import type { Logger } from 'pino';
import type { EventStore, RecordedEvent } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { readyBatches } from '../src/eventstore/readyBatches.js';
import type { ReadStore } from '../src/readstore/port.js';
import { BatchOverlay } from './batchOverlay.js';
import { DeferredCheckpoint } from './deferredCheckpoint.js';
import { appendedCheckpoint, type Projection } from './projection.js';
import { StatusReporter } from './runnerStatus.js';

/**
 * Runs a projection: catch-up subscription from its checkpoint -> batches -> one transaction per
 * batch holding the read model writes and the new checkpoint. A crash loses at most the batch
 * being written, whose transaction never committed; it is read again from the checkpoint.
 */

const MAX_BATCH = 500;
const RETRY_DELAY_MS = 1000;
/** How long a reactor's checkpoint for batches that did nothing waits to be written (see DeferredCheckpoint). */
const DEFER_CHECKPOINT_MS = 1000;

export interface RunningProjection {
  stop(): Promise<void>;
}

export function startProjection(
  deps: { events: EventStore; readStore: ReadStore; logger: Logger },
  projection: Projection,
): RunningProjection {
  const logger = deps.logger.child({ projection: projection.name });
  let stopped = false;
  let subscription: ReturnType<EventStore['subscribeToAll']> | undefined;
  const status = new StatusReporter(deps.readStore, projection.name, logger);
  const deferred = new DeferredCheckpoint(deps.readStore, projection.name, DEFER_CHECKPOINT_MS, logger);
  /** A reactor's batch that appended nothing and that no writer waits for (its transaction would hold only the checkpoint). */
  const mayDefer = (batch: RecordedEvent[], appended: Position | null | void) =>
    projection.kind === 'reactor' && !appended && projection.awaited !== undefined && !projection.awaited(batch);

  const run = async (): Promise<void> => {
    while (!stopped) {
      try {
        const from = (await deps.readStore.checkpoint(projection.name)) ?? 'start';
        logger.info({ from }, 'projection subscribing');
        subscription = deps.events.subscribeToAll({ from, filter: projection.filter });
        for await (const batch of readyBatches(subscription, MAX_BATCH)) {
          const appended = await projection.react?.(batch, () => stopped);
          if (stopped) break;
          if (mayDefer(batch, appended)) {
            deferred.defer(batch.at(-1)!.position);
            status.applied(batch.length);
            continue;
          }
          deferred.drop();
          await deps.readStore.transaction(async (tx) => {
            // A read model's batch writes each record once, as a rebuild's does (batchOverlay.ts).
            if (projection.kind === 'read-model') {
              const overlay = new BatchOverlay(tx);
              await projection.apply(overlay, batch);
              await overlay.flush();
            } else {
              await projection.apply(tx, batch);
            }
            await tx.setCheckpoint(projection.name, batch.at(-1)!.position);
            if (appended) await tx.setCheckpoint(appendedCheckpoint(projection.name), appended);
          });
          status.applied(batch.length);
        }
      } catch (error) {
        deferred.drop();
        if (stopped) break;
        logger.error({ err: error }, 'projection failed; resuming from its checkpoint');
        status.failed(error);
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
      await deferred.flush();
      await status.stop();
    },
  };
}

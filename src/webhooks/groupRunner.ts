import type { Logger } from 'pino';
import { InterruptibleSleep } from '../core/interruptibleSleep.js';
import { retryDelayMs, type PersistentEvent, type PersistentSubscription, type RetryBackoff } from '../eventstore/port.js';
import { readyBatches } from '../eventstore/readyBatches.js';

/**
 * Keeps a consumer of a persistent group running: when its subscription fails or ends, the error
 * is logged and a new one is opened after a growing wait, and `ready()` is false until the new
 * one has joined the group. A health check can report the role not ready from it.
 */

export interface GroupRunner {
  /** Joined to the group and consuming. */
  ready(): boolean;
  stop(): Promise<void>;
}

export interface GroupRunnerOptions {
  open(): PersistentSubscription;
  /** Settles every event of the batch (ack or nack). */
  handle(batch: PersistentEvent[]): Promise<void>;
  maxBatch: number;
  /**
   * After a batch smaller than maxBatch, wait this long before taking the next one, so that the
   * events of a steady stream of writes are handled together rather than one or two at a time.
   * An event after a quiet spell is handled at once; one arriving during the wait waits for it.
   */
  gatherMs?: number;
  logger: Logger;
  reconnect?: RetryBackoff;
}

const RECONNECT: RetryBackoff = { initialMs: 1_000, maxMs: 30_000 };

export function runGroup(options: GroupRunnerOptions): GroupRunner {
  let stopped = false;
  let current: PersistentSubscription | null = null;
  const backoff = new InterruptibleSleep();

  const run = async () => {
    for (let attempt = 0; !stopped; ) {
      let subscription: PersistentSubscription | null = null;
      try {
        // Inside the try: joining the group can fail too (e.g. a store busy while the server's
        // threads open it), and must then be tried again like a dropped subscription, not end
        // the fan-out for good.
        subscription = options.open();
        current = subscription;
        for await (const batch of readyBatches(subscription, options.maxBatch)) {
          attempt = 0;
          await options.handle(batch);
          if (options.gatherMs && batch.length < options.maxBatch && !stopped) await backoff.sleep(options.gatherMs);
        }
        if (stopped) return;
        options.logger.error({ attempt }, 'the webhook subscription ended; reconnecting (webhooks are not sent until it is back)');
      } catch (error) {
        if (stopped) return;
        options.logger.error({ err: error, attempt }, 'the webhook subscription failed; reconnecting (webhooks are not sent until it is back)');
      } finally {
        current = null;
        await subscription?.close().catch(() => undefined);
      }
      await backoff.sleep(retryDelayMs(attempt++, options.reconnect ?? RECONNECT));
    }
  };
  const running = run();

  return {
    ready: () => !stopped && current !== null && current.connected(),
    async stop() {
      stopped = true;
      backoff.interrupt();
      await current?.close();
      await running;
    },
  };
}

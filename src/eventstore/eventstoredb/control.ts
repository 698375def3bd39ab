import type { AllStreamSubscription, EventStoreDBClient, PersistentSubscriptionToAll } from '@eventstore/db-client';
import { InterruptibleSleep } from '../../core/interruptibleSleep.js';

/** Told about resubscriptions after errors (pino-compatible). */
export interface EsdbLogger {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/** What a subscription of the EventStoreDB adapter shares with the store that opened it. */
export interface SubscriptionContext {
  client: EventStoreDBClient;
  logger: EsdbLogger | undefined;
  /** The store's open subscriptions, closed with it. */
  open: Set<{ close(): Promise<void> }>;
  assertOpen(): void;
  messageTimeoutMs: number | undefined;
}

/** Close flag plus an interruptible backoff sleep for one subscription. */
export class Control {
  closed = false;
  private readonly waits = new Set<() => void>();
  private readonly backoff = new InterruptibleSleep();

  sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.backoff.sleep(ms);
  }

  close(): void {
    this.closed = true;
    this.backoff.interrupt();
    for (const done of [...this.waits]) done();
  }

  /** A wait of its own (beside the reconnect sleep), cut short when the subscription closes. */
  sleepFor(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waits.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waits.add(done);
    });
  }
}

/** Cancels the gRPC call behind a client subscription and destroys its stream (ends any pending read). */
export async function release(sub: AllStreamSubscription | PersistentSubscriptionToAll): Promise<void> {
  try {
    await sub.unsubscribe();
  } catch {
    // The call is already gone.
  }
  if (!sub.destroyed) sub.destroy();
}

/**
 * Runs a subscription's reconnect loop as one the store tracks: closed with the store (`close`
 * stops the loop, then `closeCall` ends the call under way), and forgotten once the loop ends.
 */
export function tracked<T>(
  open: SubscriptionContext['open'],
  control: Control,
  loop: () => AsyncGenerator<T>,
  closeCall: () => Promise<void>,
): { iterator: AsyncGenerator<T>; close(): Promise<void> } {
  const handle = {
    async close(): Promise<void> {
      control.close();
      open.delete(handle);
      await closeCall();
    },
  };
  open.add(handle);
  async function* run(): AsyncGenerator<T> {
    try {
      yield* loop();
    } finally {
      control.closed = true;
      open.delete(handle);
    }
  }
  return { iterator: run(), close: handle.close };
}


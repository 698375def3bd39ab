import type { EventFilter, RecordedEvent, Subscription } from '../port.js';
import type { EventLog } from './eventLog.js';
import type { LogWatcher } from './logWatcher.js';

const PAGE_SIZE = 1_000;

/** subscribeToAll: pages through the log from a cursor, then waits for it to grow (live). */
export class CatchUpSubscription implements Subscription {
  private closed = false;
  private cancelWait: (() => void) | undefined;
  private readonly iterator: AsyncGenerator<RecordedEvent>;

  constructor(
    private readonly log: EventLog,
    private readonly watcher: LogWatcher,
    private cursor: number,
    private readonly filter: EventFilter | undefined,
    private readonly onClose: (subscription: CatchUpSubscription) => void,
  ) {
    this.iterator = this.run();
  }

  [Symbol.asyncIterator](): AsyncIterator<RecordedEvent> {
    return this.iterator;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelWait?.();
    this.onClose(this);
  }

  /** Reads one page at a time, only when the consumer asks for more. */
  private async *run(): AsyncGenerator<RecordedEvent> {
    try {
      while (!this.closed) {
        const page = this.log.readAfter(this.cursor, this.filter, PAGE_SIZE);
        for (const entry of page.entries) {
          yield entry.event;
          if (this.closed) return;
        }
        this.cursor = page.cursor;
        if (page.caughtUp) await this.waitForMore();
      }
    } finally {
      await this.close();
    }
  }

  private async waitForMore(): Promise<void> {
    const wait = this.watcher.wait(this.cursor);
    this.cancelWait = wait.cancel;
    await wait.promise;
    this.cancelWait = undefined;
  }
}

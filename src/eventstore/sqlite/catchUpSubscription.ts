import type { EventFilter, RecordedEvent, Subscription } from '../port.js';
import type { EventLog } from './eventLog.js';
import type { LogWatcher } from './logWatcher.js';

const PAGE_SIZE = 1_000;
/** About this much event text per page: how each subscription's page is sized after the last one. */
export const PAGE_BYTES = 512 * 1024;
const MIN_PAGE_SIZE = 16;

/**
 * The next page's size from the last page's: up to PAGE_SIZE events of about PAGE_BYTES. A page of
 * large events (a bulk upsert of 5 KB records) is parsed whole and held until consumed, by every
 * subscription of the process (each projection, each reactor, the fan-out): bounded by bytes,
 * their memory stays flat whatever the records' size.
 */
export function nextPageSize(events: number, bytes: number, max = PAGE_SIZE): number {
  if (events === 0 || bytes <= 0) return max;
  return Math.max(MIN_PAGE_SIZE, Math.min(max, Math.floor((events * PAGE_BYTES) / bytes)));
}

/** subscribeToAll: pages through the log from a cursor, then waits for it to grow (live). */
export class CatchUpSubscription implements Subscription {
  private closed = false;
  private cancelWait: (() => void) | undefined;
  private readonly iterator: AsyncGenerator<RecordedEvent>;
  private pageSize = PAGE_SIZE;

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
        const page = this.log.readAfter(this.cursor, this.filter, this.pageSize);
        this.pageSize = nextPageSize(page.entries.length, page.bytes);
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

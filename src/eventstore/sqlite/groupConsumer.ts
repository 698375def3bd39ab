import type { PersistentEvent, PersistentSubscription } from '../port.js';
import type { ConsumerHost, Entry } from './groupEntry.js';

interface Request {
  resolve(result: IteratorResult<PersistentEvent>): void;
  reject(error: unknown): void;
}

const DONE: IteratorResult<PersistentEvent> = { done: true, value: undefined };

/** One consumer of a group: pulls events (at most bufferSize un-acked) as its iterator asks. */
export class Consumer implements PersistentSubscription, AsyncIterator<PersistentEvent> {
  private readonly inFlight = new Set<Entry>();
  private readonly requests: Request[] = [];
  private closed = false;

  constructor(
    private readonly group: ConsumerHost,
    private readonly bufferSize: number,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<PersistentEvent> {
    return this;
  }

  get hungry(): boolean {
    return !this.closed && this.requests.length > 0 && this.inFlight.size < this.bufferSize;
  }

  next(): Promise<IteratorResult<PersistentEvent>> {
    if (this.closed) return Promise.resolve(DONE);
    return new Promise((resolve, reject) => {
      this.requests.push({ resolve, reject });
      this.group.dispatch();
    });
  }

  async return(): Promise<IteratorResult<PersistentEvent>> {
    await this.close();
    return DONE;
  }

  async close(): Promise<void> {
    this.end();
  }

  /** In process, a consumer is joined to its group until it is closed. */
  connected(): boolean {
    return !this.closed;
  }

  /** Stops this consumer and gives back what it held, un-acked. */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const request of this.requests.splice(0)) request.resolve(DONE);
    const held = [...this.inFlight];
    this.inFlight.clear();
    this.group.detach(this, held);
  }

  deliver({ entry, value }: { entry: Entry; value: PersistentEvent }): void {
    this.inFlight.add(entry);
    this.requests.shift()!.resolve({ done: false, value });
  }

  release(entry: Entry): void {
    this.inFlight.delete(entry);
  }

  fail(error: unknown): void {
    for (const request of this.requests.splice(0)) request.reject(error);
  }
}

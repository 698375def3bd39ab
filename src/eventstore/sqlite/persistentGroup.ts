import type { EventFilter, PersistentEvent, RecordedEvent } from '../port.js';
import { Consumer } from './groupConsumer.js';
import type { EventLog, LogEntry } from './eventLog.js';
import type { GroupTables, ParkedRecord } from './groupTables.js';
import type { LogWatcher } from './logWatcher.js';

const GROUP_PAGE_SIZE = 500;
/** A group writes its checkpoint at most this often: every write is an fsync on the event loop. */
const GROUP_PERSIST_DELAY_MS = 100;

export interface Entry {
  seq: number;
  event: RecordedEvent;
  retryCount: number;
  holder: Consumer | undefined;
  /** Identifies the current hand-out; acks of an earlier hand-out are ignored. */
  token: object | undefined;
}

export interface GroupSettings {
  filter: EventFilter | undefined;
  maxRetryCount: number;
}

type Settlement = 'ack' | 'retry' | 'park';

/**
 * One group's state in this process, shared by its competing consumers. The checkpoint is the seq
 * before the oldest outstanding (queued or handed out) event, or the read cursor when none is:
 * everything up to it is acked, parked or outside the filter.
 */
export class PersistentGroup {
  /** Read from the log and not yet done; insertion order is log order, so the first is the oldest. */
  private readonly outstanding = new Map<number, Entry>();
  /** Waiting to be handed out; retries go to the front. */
  private readonly queue: Entry[] = [];
  private readonly consumers: Consumer[] = [];
  private roundRobin = 0;
  private readCursor: number;
  private checkpoint: number;
  private readonly knownRetries: Map<number, number>;
  private readonly knownParked: Set<number>;
  private readonly unsavedRetries = new Map<number, number>();
  private unsavedParked: ParkedRecord[] = [];
  private dirty = false;
  private persistTimer: NodeJS.Timeout | undefined;
  private feeding = false;
  private cancelWait: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly name: string,
    private readonly settings: GroupSettings,
    private readonly tables: GroupTables,
    private readonly log: EventLog,
    private readonly watcher: LogWatcher,
  ) {
    const state = tables.load(name);
    this.checkpoint = state.checkpoint;
    this.readCursor = state.checkpoint;
    this.knownRetries = state.retries;
    this.knownParked = state.parked;
  }

  attach(bufferSize: number): Consumer {
    if (this.stopped) throw new Error('the event store is closed');
    const consumer = new Consumer(this, bufferSize);
    this.consumers.push(consumer);
    return consumer;
  }

  /** A consumer left: what it held goes back to the others (or to the next consumer). */
  detach(consumer: Consumer, held: Entry[]): void {
    this.consumers.splice(this.consumers.indexOf(consumer), 1);
    for (const entry of held.sort((a, b) => b.seq - a.seq)) this.requeue(entry);
    if (!this.consumers.some((c) => c.hungry)) this.cancelWait?.();
    this.dispatch();
    if (this.consumers.length === 0 && !this.stopped) this.persistOrRetryLater();
  }

  /** The adapter is closing: end the consumers and write what the group knows. */
  stop(): void {
    this.stopped = true;
    for (const consumer of [...this.consumers]) consumer.end();
    this.cancelWait?.();
    this.persist();
  }

  /** Hands queued events to hungry consumers in turn; reads the log when the queue runs dry. */
  dispatch(): void {
    while (this.queue.length > 0) {
      const consumer = this.nextHungryConsumer();
      if (!consumer) return;
      consumer.deliver(this.handOut(this.queue.shift()!, consumer));
    }
    if (this.consumers.some((c) => c.hungry)) this.startFeeding();
  }

  private nextHungryConsumer(): Consumer | undefined {
    const count = this.consumers.length;
    for (let i = 0; i < count; i++) {
      const index = (this.roundRobin + i) % count;
      const consumer = this.consumers[index]!;
      if (consumer.hungry) {
        this.roundRobin = (index + 1) % count;
        return consumer;
      }
    }
    return undefined;
  }

  private handOut(entry: Entry, consumer: Consumer): { entry: Entry; value: PersistentEvent } {
    const token = {};
    entry.holder = consumer;
    entry.token = token;
    const value: PersistentEvent = {
      event: entry.event,
      retryCount: entry.retryCount,
      ack: async () => this.settle(entry, token, 'ack', ''),
      nack: async (action, reason) => this.settle(entry, token, action, reason),
    };
    return { entry, value };
  }

  private settle(entry: Entry, token: object, action: Settlement, reason: string): void {
    if (entry.token !== token || this.stopped) return;
    entry.holder!.release(entry);
    entry.holder = undefined;
    entry.token = undefined;
    if (action === 'ack') this.finish(entry);
    else if (action === 'park') this.park(entry, reason);
    else if (entry.retryCount >= this.settings.maxRetryCount) {
      this.park(entry, `retried ${entry.retryCount} times (maxRetryCount ${this.settings.maxRetryCount}): ${reason}`);
    } else this.requeue(entry);
    this.dispatch();
  }

  private requeue(entry: Entry): void {
    entry.holder = undefined;
    entry.token = undefined;
    entry.retryCount += 1;
    this.unsavedRetries.set(entry.seq, entry.retryCount);
    this.queue.unshift(entry);
    this.schedulePersist();
  }

  private park(entry: Entry, reason: string): void {
    this.unsavedParked.push({ seq: entry.seq, reason, parkedAt: Date.now() });
    this.finish(entry);
  }

  private finish(entry: Entry): void {
    this.outstanding.delete(entry.seq);
    this.advanceCheckpoint();
  }

  private advanceCheckpoint(): void {
    const oldest = this.outstanding.keys().next();
    const candidate = oldest.done ? this.readCursor : oldest.value - 1;
    if (candidate > this.checkpoint) {
      this.checkpoint = candidate;
      this.schedulePersist();
    }
  }

  private startFeeding(): void {
    if (this.feeding || this.stopped) return;
    this.feeding = true;
    this.feed().catch((error: unknown) => {
      for (const consumer of this.consumers) consumer.fail(error);
    });
  }

  private async feed(): Promise<void> {
    try {
      while (!this.stopped && this.queue.length === 0 && this.consumers.some((c) => c.hungry)) {
        const page = this.log.readAfter(this.readCursor, this.settings.filter, GROUP_PAGE_SIZE);
        for (const entry of page.entries) this.enqueueNew(entry);
        this.readCursor = page.cursor;
        // Events outside the filter or parked before a restart are done without a hand-out.
        this.advanceCheckpoint();
        this.dispatch();
        if (page.caughtUp && this.queue.length === 0) await this.waitForLog();
      }
    } finally {
      // Cleared synchronously when the loop ends, so a dispatch right after restarts feeding.
      this.feeding = false;
    }
  }

  private enqueueNew({ seq, event }: LogEntry): void {
    if (this.knownParked.delete(seq)) return;
    const retryCount = this.knownRetries.get(seq) ?? 0;
    this.knownRetries.delete(seq);
    const entry: Entry = { seq, event, retryCount, holder: undefined, token: undefined };
    this.outstanding.set(seq, entry);
    this.queue.push(entry);
  }

  private async waitForLog(): Promise<void> {
    const wait = this.watcher.wait(this.readCursor);
    this.cancelWait = wait.cancel;
    await wait.promise;
    this.cancelWait = undefined;
  }

  private schedulePersist(): void {
    this.dirty = true;
    this.persistTimer ??= setTimeout(() => {
      this.persistTimer = undefined;
      this.persistOrRetryLater();
    }, GROUP_PERSIST_DELAY_MS);
  }

  /** A failed background write loses nothing (at least once): keep the changes and try again. */
  private persistOrRetryLater(): void {
    try {
      this.persist();
    } catch {
      this.schedulePersist();
    }
  }

  private persist(): void {
    if (this.persistTimer) clearTimeout(this.persistTimer);
    this.persistTimer = undefined;
    if (!this.dirty) return;
    this.tables.save(this.name, this.checkpoint, this.unsavedRetries, this.unsavedParked);
    this.unsavedRetries.clear();
    this.unsavedParked = [];
    this.dirty = false;
  }
}

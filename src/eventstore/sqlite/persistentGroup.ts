import { retryDelayMs, type EventFilter, type PersistentEvent, type RetryBackoff } from '../port.js';
import type { Entry } from './groupEntry.js';
import { Consumer } from './groupConsumer.js';
import type { EventLog, LogEntry } from './eventLog.js';
import type { GroupTables, ParkedRecord } from './groupTables.js';
import type { LogWatcher } from './logWatcher.js';
import { nextPageSize } from './catchUpSubscription.js';

const GROUP_PAGE_SIZE = 500;
/** A group writes its checkpoint at most this often: every write is an fsync on the event loop. */
const GROUP_PERSIST_DELAY_MS = 100;

export interface GroupSettings {
  filter: EventFilter | undefined;
  maxRetryCount: number;
  retryBackoff: RetryBackoff;
}

/** How often a group looks for replay requests (an operator's command may come from another process). */
const REPLAY_POLL_MS = 1_000;

type Settlement = 'ack' | 'retry' | 'park';

/**
 * One group's state in this process, shared by its competing consumers. The checkpoint is the seq
 * before the oldest outstanding (queued or handed out) event, or the read cursor when none is:
 * everything up to it is acked, parked or outside the filter.
 */
export class PersistentGroup {
  /** Retried events waiting out their backoff, with their timers. */
  private readonly backingOff = new Map<Entry, NodeJS.Timeout>();
  /** Replayed events handed out and not done yet, by seq. */
  private readonly replaying = new Map<number, Entry>();
  private unsavedReplayed: number[] = [];
  private replayTimer: NodeJS.Timeout | undefined;
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
  /** Events per page read, sized by the last page (nextPageSize): large events come fewer at a time. */
  private pageSize = GROUP_PAGE_SIZE;
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
    this.replayTimer ??= setInterval(() => this.takeReplays(), REPLAY_POLL_MS);
    this.replayTimer.unref();
    this.takeReplays();
    return consumer;
  }

  /** A consumer left: what it held goes back to the others (or to the next consumer). */
  detach(consumer: object, held: Entry[]): void {
    this.consumers.splice(this.consumers.indexOf(consumer as Consumer), 1);
    if (this.consumers.length === 0) {
      clearInterval(this.replayTimer);
      this.replayTimer = undefined;
    }
    for (const entry of held.sort((a, b) => b.seq - a.seq)) this.requeue(entry);
    if (!this.consumers.some((c) => c.hungry)) this.cancelWait?.();
    this.dispatch();
    if (this.consumers.length === 0 && !this.stopped) this.persistOrRetryLater();
  }

  /** The adapter is closing: end the consumers and write what the group knows. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.replayTimer);
    for (const timer of this.backingOff.values()) clearTimeout(timer);
    this.backingOff.clear();
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
    } else this.retryLater(entry);
    this.dispatch();
  }

  /** A retry waits, longer each time, so that ten quick failures do not park an event at once. */
  private retryLater(entry: Entry): void {
    const delay = retryDelayMs(entry.retryCount, this.settings.retryBackoff);
    // Counted now, so that a restart during the wait still knows the retry happened.
    entry.retryCount += 1;
    this.unsavedRetries.set(entry.seq, entry.retryCount);
    this.schedulePersist();
    const timer = setTimeout(() => {
      this.backingOff.delete(entry);
      if (this.stopped) return;
      this.queue.unshift(entry);
      this.dispatch();
    }, delay);
    this.backingOff.set(entry, timer);
  }

  /** Replay requests not yet handed out become entries at the front of the queue. */
  takeReplays(): void {
    if (this.stopped || this.consumers.length === 0) return;
    let added = false;
    try {
      for (const seq of this.tables.replays(this.name)) {
        if (this.replaying.has(seq)) continue;
        const found = this.log.readAfter(seq - 1, undefined, 1).entries[0];
        if (!found || found.seq !== seq) continue;
        const entry: Entry = { seq, event: found.event, retryCount: 0, holder: undefined, token: undefined, replay: true };
        this.replaying.set(seq, entry);
        this.queue.push(entry);
        added = true;
      }
    } catch {
      return; // the next poll tries again
    }
    if (added) this.dispatch();
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
    if (entry.replay) {
      this.replaying.delete(entry.seq);
      this.unsavedReplayed.push(entry.seq);
      this.schedulePersist();
      return;
    }
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
        const page = this.log.readAfter(this.readCursor, this.settings.filter, this.pageSize);
        this.pageSize = nextPageSize(page.entries.length, page.bytes, GROUP_PAGE_SIZE);
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
    const entry: Entry = { seq, event, retryCount, holder: undefined, token: undefined, replay: false };
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

  /** Writes what the group knows now (an operator's replay must see the latest parked events). */
  persist(): void {
    if (this.persistTimer) clearTimeout(this.persistTimer);
    this.persistTimer = undefined;
    if (!this.dirty) return;
    this.tables.save(this.name, this.checkpoint, this.unsavedRetries, this.unsavedParked, this.unsavedReplayed);
    this.unsavedRetries.clear();
    this.unsavedParked = [];
    this.unsavedReplayed = [];
    this.dirty = false;
  }
}

/**
 * Appends by another process reach live subscribers of this one after one poll of max(seq). That
 * is on the path of every write made by another API process (API_PROCESSES) to the projector, so
 * polls come every 2 ms while the log grows, backing off to 20 ms while it is quiet (an idle
 * projector then polls 50 times a second, not 500).
 */
const POLL_MIN_MS = 2;
const POLL_MAX_MS = 20;

interface Waiter {
  after: number;
  resolve(): void;
}

export interface Wait {
  promise: Promise<void>;
  cancel(): void;
}

/** Wakes waiters once the log holds an event after theirs: immediately for this instance's
 *  appends, by polling for other processes' appends (the poll runs only while someone waits). */
export class LogWatcher {
  private head: number;
  private readonly waiters = new Set<Waiter>();
  private timer: NodeJS.Timeout | undefined;
  private delay = POLL_MIN_MS;
  /** Another opener has committed since the head was last read (see `changed`). */
  private stale = false;

  constructor(private readonly readHead: () => number) {
    this.head = readHead();
  }

  wait(after: number): Wait {
    if (this.stale) {
      this.stale = false;
      try {
        this.advance(this.readHead());
      } catch {
        // As a failed poll does: the caller reads again at once and meets the failure there.
        return { promise: Promise.resolve(), cancel: () => undefined };
      }
    }
    let waiter: Waiter | undefined;
    const promise = new Promise<void>((resolve) => {
      waiter = { after, resolve };
    });
    const registered = waiter!;
    if (this.head > after) {
      registered.resolve();
    } else {
      this.waiters.add(registered);
      this.startPolling();
    }
    return { promise, cancel: () => this.release(registered) };
  }

  /**
   * Another opener says the log changed: look now if somebody waits, else at the next wait (a
   * read of the head per commit for nobody would cost the threads that only append).
   */
  changed(): void {
    if (this.waiters.size === 0) {
      this.stale = true;
      return;
    }
    try {
      this.advance(this.readHead());
    } catch {
      // The waiters read again and meet the failure in their own iteration.
      this.stop();
    }
  }

  advance(head: number): void {
    if (head <= this.head) return;
    this.head = head;
    for (const waiter of this.waiters) if (waiter.after < head) this.release(waiter);
  }

  stop(): void {
    for (const waiter of this.waiters) this.release(waiter);
  }

  private release(waiter: Waiter): void {
    this.waiters.delete(waiter);
    waiter.resolve();
    if (this.waiters.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private startPolling(): void {
    // Not unref'd: a process whose only work is a live subscription (ROLES=projector) must stay up.
    this.timer ??= setTimeout(() => this.poll(), this.delay);
  }

  private poll(): void {
    this.timer = undefined;
    const before = this.head;
    try {
      this.advance(this.readHead());
    } catch {
      // Let the waiters read again: the failure then surfaces in their own iteration.
      this.stop();
      return;
    }
    this.delay = this.head > before ? POLL_MIN_MS : Math.min(this.delay * 2, POLL_MAX_MS);
    if (this.waiters.size > 0) this.startPolling();
  }
}

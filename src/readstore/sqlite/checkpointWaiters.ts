import { hasReached, type Position } from '../../eventstore/position.js';
import { fileSignal, type FileSignal } from '../../sqlite/fileSignal.js';

/**
 * While somebody waits for a checkpoint, how often another process's progress is looked for: a
 * write answered by another process than the projector's (API_PROCESSES) waits for this poll.
 */
const POLL_INTERVAL_MS = 2;

interface Waiter {
  projection: string;
  position: Position;
  resolve(reached: boolean): void;
  timer: NodeJS.Timeout;
}

/** Callers of waitForCheckpoint, answered as soon as the projection's checkpoint has passed their position. */
export class CheckpointWaiters {
  private readonly waiters = new Set<Waiter>();
  private poller: NodeJS.Timeout | null = null;
  /** A projector in another thread of this process says so at once... */
  private readonly reached: FileSignal;
  /**
   * The furthest each projection's checkpoint has been seen here. Checkpoints only move forward
   * but for a reset or a promotion (`forget`), so what was reached stays reached: the reactors in
   * the projector's thread, which wait for the records projection of that same thread before every
   * batch, then need no read of the store.
   */
  private readonly known = new Map<string, Position>();

  constructor(
    path: string,
    private readonly checkpoint: (projection: string) => Position | null,
  ) {
    this.reached = fileSignal('checkpoint', path, () => this.poll());
  }

  waitFor(projection: string, position: Position, timeoutMs: number): Promise<boolean> {
    if (hasReached(this.known.get(projection) ?? null, position) || hasReached(this.read(projection), position)) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        projection,
        position,
        resolve,
        timer: setTimeout(() => this.settle(waiter, false), Math.max(0, timeoutMs)),
      };
      this.waiters.add(waiter);
      if (!this.poller) {
        this.poller = setInterval(() => this.poll(), POLL_INTERVAL_MS);
        this.poller.unref();
      }
    });
  }

  /** A checkpoint this thread has committed: its waiters here, and those of the other threads. */
  committed(projection: string, position: Position): void {
    this.wake(projection, position);
    this.reached.changed();
  }

  /** The projection's checkpoint was reset or replaced: it may now be behind what was seen. */
  forget(): void {
    this.known.clear();
  }

  close(): void {
    for (const waiter of [...this.waiters]) this.settle(waiter, false);
    this.reached.close();
  }

  private settle(waiter: Waiter, reached: boolean): void {
    if (!this.waiters.delete(waiter)) return;
    clearTimeout(waiter.timer);
    waiter.resolve(reached);
    if (this.waiters.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = null;
    }
  }

  private read(projection: string): Position | null {
    const checkpoint = this.checkpoint(projection);
    this.remember(projection, checkpoint);
    return checkpoint;
  }

  private remember(projection: string, checkpoint: Position | null): void {
    if (checkpoint !== null && !hasReached(this.known.get(projection) ?? null, checkpoint)) this.known.set(projection, checkpoint);
  }

  private wake(projection: string, checkpoint: Position | null): void {
    this.remember(projection, checkpoint);
    for (const waiter of this.waiters) {
      if (waiter.projection === projection && hasReached(checkpoint, waiter.position)) this.settle(waiter, true);
    }
  }

  /** ...one in another process is seen by looking at its checkpoints (only those somebody waits for). */
  private poll(): void {
    if (this.waiters.size === 0) return;
    const projections = new Set([...this.waiters].map((waiter) => waiter.projection));
    for (const projection of projections) this.wake(projection, this.checkpoint(projection));
  }
}

import { hasReached, type Position } from '../../eventstore/position.js';
import type { Pool, PoolClient } from '../../postgres/pool.js';
import { CHECKPOINT_CHANNEL } from './schema.js';

/**
 * Serves waitForCheckpoint (read-your-writes across API processes): a checkpoint's commit is
 * announced with pg_notify inside its transaction, which the server delivers at commit, to every
 * process LISTENing on a connection of its own. A slow poll covers what a notification cannot (the
 * listening connection lost, say while the server restarts) and deadlines; it never spins.
 *
 * The listening connection is taken from the pool while this process has ever had a waiter, and
 * given up (destroyed, not returned: it holds the LISTEN) on close or when it fails; the next wait
 * listens again. LISTEN is in place before a waiter reads the checkpoint, so a commit after that
 * read is always announced to it.
 */

/** Poll while listening: only a safety net. */
export const SLOW_POLL_MS = 1_000;
/** Poll while not listening (the connection is being made again): waiters must still progress. */
const FALLBACK_POLL_MS = 100;

interface Waiter {
  projection: string;
  position: Position;
  resolve(reached: boolean): void;
  timer: NodeJS.Timeout;
}

export class CheckpointWatcher {
  private readonly waiters = new Set<Waiter>();
  /** The newest position announced per projection (notifications may come in any order). */
  private readonly announced = new Map<string, Position>();
  /**
   * Projections whose checkpoint was read while the current listener listened: every commit since
   * is announced to it, so `announced` knows their checkpoint and a wait needs no read of its own
   * (one query per write saved). Forgotten with the listener.
   */
  private readonly known = new Set<string>();
  private listener: PoolClient | null = null;
  private connecting: Promise<void> | null = null;
  private poller: NodeJS.Timeout | null = null;
  private polling = false;
  private closed = false;

  constructor(
    private readonly pool: Pool,
    private readonly read: (projection: string) => Promise<Position | null>,
    private readonly slowPollMs = SLOW_POLL_MS,
  ) {}

  async wait(projection: string, position: Position, timeoutMs: number): Promise<boolean> {
    if (this.closed) return false;
    await this.listen();
    if (this.reached(projection, position)) return true;
    if (!this.known.has(projection)) {
      const listener = this.listener;
      const read = await this.read(projection);
      if (read !== null) this.note(projection, read);
      if (listener !== null && listener === this.listener) this.known.add(projection);
      if (hasReached(read, position)) return true;
    }
    if (this.reached(projection, position)) return true;
    if (timeoutMs <= 0 || this.closed) return false;
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { projection, position, resolve, timer: setTimeout(() => this.settle(waiter, false), timeoutMs) };
      this.waiters.add(waiter);
      this.schedulePoll();
    });
  }

  close(): void {
    this.closed = true;
    for (const waiter of [...this.waiters]) this.settle(waiter, false);
    if (this.poller) clearTimeout(this.poller);
    this.poller = null;
    this.dropListener();
  }

  private reached(projection: string, position: Position): boolean {
    return hasReached(this.announced.get(projection) ?? null, position);
  }

  private note(projection: string, position: Position): void {
    if (!this.reached(projection, position)) this.announced.set(projection, position);
    for (const waiter of [...this.waiters]) {
      if (waiter.projection === projection && hasReached(position, waiter.position)) this.settle(waiter, true);
    }
  }

  private settle(waiter: Waiter, reached: boolean): void {
    if (!this.waiters.delete(waiter)) return;
    clearTimeout(waiter.timer);
    waiter.resolve(reached);
  }

  /** Listens, once; a failure leaves the poll to do the work and the next wait to try again. */
  private listen(): Promise<void> {
    if (this.listener || this.closed) return Promise.resolve();
    this.connecting ??= (async () => {
      let client: PoolClient | null = null;
      try {
        client = await this.pool.connect();
        const onLost = () => this.dropListener();
        client.on('error', onLost);
        client.on('end', onLost);
        client.on('notification', (message) => {
          if (message.channel !== CHECKPOINT_CHANNEL || !message.payload) return;
          try {
            const [projection, position] = JSON.parse(message.payload) as [string, Position | null];
            // null: the projection was reset, its checkpoint is gone (and known to be).
            if (position === null) this.announced.delete(projection);
            else this.note(projection, position);
          } catch {
            // Not ours: ignored.
          }
        });
        await client.query(`LISTEN ${CHECKPOINT_CHANNEL}`);
        if (this.closed) client.release(true);
        else this.listener = client;
      } catch {
        client?.release(true);
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }

  private dropListener(): void {
    const client = this.listener;
    this.listener = null;
    // Notifications may have been missed while the connection was going: forget what was announced.
    this.announced.clear();
    this.known.clear();
    if (client) {
      try {
        client.release(true);
      } catch {
        // Already released.
      }
    }
  }

  private schedulePoll(): void {
    if (this.poller || this.polling || this.closed || this.waiters.size === 0) return;
    this.poller = setTimeout(() => {
      this.poller = null;
      void this.poll();
    }, this.listener ? this.slowPollMs : FALLBACK_POLL_MS);
    this.poller.unref();
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      if (!this.listener) await this.listen();
      const projections = new Set([...this.waiters].map((waiter) => waiter.projection));
      for (const projection of projections) {
        const position = await this.read(projection);
        if (position !== null) this.note(projection, position);
      }
    } catch {
      // The server is away: the next poll tries again; deadlines still apply.
    } finally {
      this.polling = false;
      this.schedulePoll();
    }
  }
}

import pg from 'pg';
import type { Pool } from '../../postgres/pool.js';
import { NOTIFY_CHANNEL } from './appender.js';

/**
 * Wakes this process's followers (catch-up subscriptions, persistent consumers) when any process
 * appends: one dedicated connection (a pg.Client, not a pooled one: LISTEN belongs to a session,
 * which a transaction-pooling proxy does not keep) listens on the channel every append notifies at
 * commit. It is a hint only: followers also look again after a slow poll, so a lost notification,
 * a connection being re-made or a proxy without LISTEN costs latency, never an event. The poll is
 * quicker while the connection is down, so followers resume soon after the server comes back.
 */

/** How long a follower waits without a notification before it looks again anyway. */
const POLL_MS = 2_000;
const POLL_WHILE_DOWN_MS = 500;
const RECONNECT_MS = 1_000;

export class Notifier {
  /** Bumped by every notification: a follower compares it across its read to not miss one. */
  generation = 0;
  private client: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private readonly waiters = new Set<() => void>();
  private reconnectTimer: NodeJS.Timeout | undefined;
  private started = false;
  /** The highest head seq this process's own appends have woken its followers for. */
  private announced = 0;

  constructor(private readonly pool: Pool) {}

  /** Waits for a notification after `generation`, or the poll interval, or `ms` when sooner. */
  wait(generation: number, ms = Number.POSITIVE_INFINITY): { promise: Promise<void>; cancel(): void } {
    this.start();
    if (this.closed || generation !== this.generation) return { promise: Promise.resolve(), cancel: () => undefined };
    let wake!: () => void;
    const promise = new Promise<void>((resolve) => (wake = resolve));
    const timer = setTimeout(done, Math.max(0, Math.min(ms, this.listening ? POLL_MS : POLL_WHILE_DOWN_MS)));
    const waiters = this.waiters;
    function done(): void {
      clearTimeout(timer);
      waiters.delete(done);
      wake();
    }
    waiters.add(done);
    return { promise, cancel: done };
  }

  /**
   * Wakes this process's followers at once (after its own append, which they need not wait for,
   * given the head seq it committed).
   */
  notify(ownSeq?: number): void {
    if (ownSeq !== undefined && ownSeq > this.announced) this.announced = ownSeq;
    this.generation += 1;
    for (const waiter of [...this.waiters]) waiter();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.notify();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /**
   * A notification carries the head seq an append committed (a replay of parked events: none). Its followers
   * were woken already when this process appended that seq or a later one itself (an append's
   * commit makes every seq below it visible, positions being given in commit order), and each wake
   * is a read per follower: the echo of the process's own append, which arrives after its local
   * wake nearly always, is passed over. One that arrives first still wakes them.
   */
  private notified(payload: string | undefined): void {
    if (payload !== undefined && /^[0-9]+$/.test(payload) && Number(payload) <= this.announced) return;
    this.notify();
  }

  private start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ ...(this.pool.options as pg.ClientConfig), application_name: 'csr-listen' });
    this.client = client;
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.listening = false;
      client.end().catch(() => undefined);
      if (!this.closed) this.reconnectTimer = setTimeout(() => void this.connect(), RECONNECT_MS);
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => this.notified(message.payload));
    try {
      await client.connect();
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
      if (this.client !== client) return void client.end().catch(() => undefined);
      this.listening = true;
      // Appends made while nobody listened were not announced: followers look once.
      this.notify();
    } catch {
      lost();
    }
  }
}

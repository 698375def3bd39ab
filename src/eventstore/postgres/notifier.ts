import pg from 'pg';
import type { Pool } from '../../postgres/pool.js';
import type { EventFilter } from '../port.js';
import { mayMatch, parseAnnouncement, payloadSeq, type Announcement } from './announcement.js';
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
/** Wakes remembered with what they announced (./announcement.ts): a follower further behind reads. */
const REMEMBERED = 256;
const NOTHING_APPENDED = 'nothing appended';

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
  /** The last REMEMBERED wakes, oldest first: the generation each made, and its announcement (null: unknown). */
  private readonly wakes: Array<{ generation: number; announcement: Announcement | null | typeof NOTHING_APPENDED }> = [];

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

  /** Wakes this process's followers at once, telling them nothing about what changed. */
  notify(): void {
    this.wake(null);
  }

  /**
   * Wakes this process's followers for a change that added nothing to the log (a persistent
   * group's event settled or handed back: a consumer may have room again): catch-up followers
   * waiting on the log pass it over without a read.
   */
  nudge(): void {
    this.wake(NOTHING_APPENDED);
  }
  /** Wakes this process's followers for its own append transaction, with what it wrote. */
  announce(announcement: Announcement): void {
    if (announcement.to > this.announced) this.announced = announcement.to;
    this.wake(announcement);
  }

  /**
   * For a filtered follower that had read everything up to `cursor` when the notifier stood at
   * `generation`: when every wake since then announced an append that continues from the cursor
   * (in commit order, the next starting at or before where the last ended) with no stream the
   * filter can match, the cursor those appends end at and the generation that reached it, so the
   * follower moves there without reading. Otherwise (a wake without an announcement, one it cannot
   * chain, a poll with no wake at all, wakes forgotten) undefined: it reads.
   */
  passOver(generation: number, cursor: string, filter: EventFilter): { cursor: string; generation: number } | undefined {
    if (generation >= this.generation) return undefined;
    const first = this.wakes[0];
    if (first === undefined || first.generation > generation + 1) return undefined;
    let at = Number(cursor);
    if (!Number.isSafeInteger(at)) return undefined;
    for (const wake of this.wakes) {
      if (wake.generation <= generation) continue;
      const announced = wake.announcement;
      if (announced === NOTHING_APPENDED) continue;
      if (announced === null) return undefined;
      if (announced.to <= at) continue;
      if (announced.from > at || mayMatch(filter, announced.kinds)) return undefined;
      at = announced.to;
    }
    return { cursor: String(at), generation: this.generation };
  }

  private wake(announcement: Announcement | null | typeof NOTHING_APPENDED): void {
    this.generation += 1;
    this.wakes.push({ generation: this.generation, announcement });
    if (this.wakes.length > REMEMBERED) this.wakes.shift();
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
    const seq = payloadSeq(payload);
    if (seq !== null && seq <= this.announced) return;
    this.wake(parseAnnouncement(payload));
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

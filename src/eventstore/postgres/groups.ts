import { randomUUID } from 'node:crypto';
import { preparedQuery, type Pool } from '../../postgres/pool.js';
import { retryDelayMs, type EventFilter, type PersistentEvent, type PersistentSubscription, type RecordedEvent, type RetryBackoff } from '../port.js';
import { sleep } from './catchUp.js';
import type { Notifier } from './notifier.js';
import { groupRowsDeleted } from './settle.js';
import { COLUMNS, filterSql, HEAD, rowEvent, seqPosition, type EventRow } from './rows.js';

/**
 * Persistent subscription groups as tables, served by any number of consumers in any number of
 * processes (competing consumers):
 *
 * - `csr_groups` holds each group's cursor: the log has been looked at up to it. A consumer with
 *   nothing to claim moves it on (feeds the group): under the group row's lock, taken with SKIP
 *   LOCKED so that competing feeders never queue behind each other, it copies the seqs of the
 *   matching events after the cursor into `csr_group_events`.
 * - `csr_group_events` holds one row per event not yet done: waiting, claimed, backing off or
 *   parked. A consumer claims the oldest due rows with FOR UPDATE SKIP LOCKED, so two consumers
 *   never take the same row; a claim lasts CLAIM_MS and is renewed while its consumer lives, so a
 *   consumer killed with its claims loses them after the claim timeout and another hands the
 *   events out again (at least once). An ack deletes the row; a retry sets its due time
 *   (retryDelayMs) and counts it; past maxRetryCount, or on nack('park'), the row is parked until
 *   replayParked.
 *
 * The group's checkpoint (operators' status) is the seq before its oldest row not parked, or its
 * cursor when there is none.
 */

const FEED_PAGE = 500;
const CLAIM_PAGE = 100;
const FAILED_RETRY_MS = 1_000;

export interface GroupSettings {
  filter: EventFilter | undefined;
  maxRetryCount: number;
  retryBackoff: RetryBackoff;
  bufferSize: number;
  claimMs: number;
}

export async function ensureGroup(pool: Pool, group: string): Promise<void> {
  await pool.query('INSERT INTO csr_groups (name, cursor) SELECT $1, seq FROM csr_event_head ON CONFLICT (name) DO NOTHING', [group]);
}

export async function replayParked(pool: Pool, group: string): Promise<number> {
  const result = await pool.query(
    `WITH replayed AS (
       UPDATE csr_group_events SET parked = false, reason = NULL, retry_count = 0, due_at = clock_timestamp(), claimed_by = NULL, claimed_until = NULL
       WHERE grp = $1 AND parked RETURNING seq
     ) SELECT count(*)::integer AS count, pg_notify('csr_events', '') FROM replayed`,
    [group],
  );
  return (result.rows[0] as { count: number }).count;
}

export async function groupCheckpoint(pool: Pool, group: string): Promise<{ position: string | null } | null> {
  const result = await pool.query<{ cursor: string; oldest: string | null }>(
    'SELECT g.cursor, (SELECT min(seq) FROM csr_group_events e WHERE e.grp = g.name AND NOT e.parked) AS oldest FROM csr_groups g WHERE g.name = $1',
    [group],
  );
  const row = result.rows[0];
  if (!row) return null;
  const settled = row.oldest === null ? BigInt(row.cursor) : BigInt(row.oldest) - 1n;
  return { position: settled === 0n ? null : seqPosition(settled.toString()) };
}

export class GroupConsumer implements PersistentSubscription {
  private readonly me = randomUUID();
  private readonly buffer: PersistentEvent[] = [];
  /** Claimed by this consumer and not settled yet (in the buffer or handed out), by seq. */
  private readonly mine = new Set<string>();
  private closed = false;
  private healthy = true;
  private ensured = false;
  private cancelWait: (() => void) | undefined;
  private readonly renewTimer: NodeJS.Timeout;
  /** Acks given in the same turn (a batch's, all at once), deleted by one statement. */
  private acks: { seqs: string[]; deleted: Promise<void> } | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly notifier: Notifier,
    private readonly group: string,
    private readonly settings: GroupSettings,
    private readonly onClose: (consumer: GroupConsumer) => void,
  ) {
    this.renewTimer = setInterval(() => void this.renew(), Math.max(100, Math.floor(settings.claimMs / 3)));
    this.renewTimer.unref();
  }

  connected(): boolean {
    return this.healthy && !this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.renewTimer);
    this.cancelWait?.();
    this.onClose(this);
    // What this consumer held goes back to the group at once, not after the claim timeout.
    const held = [...this.mine];
    this.mine.clear();
    this.buffer.length = 0;
    if (held.length > 0) {
      await this.pool
        .query('UPDATE csr_group_events SET claimed_by = NULL, claimed_until = NULL WHERE grp = $1 AND claimed_by = $2 AND seq = ANY($3::bigint[])', [this.group, this.me, held])
        .then(() => this.notifier.nudge())
        .catch(() => undefined);
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<PersistentEvent> {
    return { next: () => this.next() };
  }

  private async next(): Promise<IteratorResult<PersistentEvent>> {
    while (!this.closed) {
      const buffered = this.buffer.shift();
      if (buffered) return { value: buffered, done: false };
      const generation = this.notifier.generation;
      let dueInMs: number | null = null;
      try {
        if (!this.ensured) {
          await ensureGroup(this.pool, this.group);
          this.ensured = true;
        }
        const room = this.settings.bufferSize - this.mine.size;
        if (room > 0) {
          const turn = await this.claimAndFeed(Math.min(room, CLAIM_PAGE));
          if (turn.handed > 0 || turn.fed > 0) continue;
          dueInMs = turn.dueInMs;
        }
        this.healthy = true;
      } catch {
        this.healthy = false;
        await this.pause(sleep(FAILED_RETRY_MS));
        continue;
      }
      // Woken by an append (any process), a settle here (room in the buffer), a replay, or the retry falling due.
      await this.pause(this.notifier.wait(generation, dueInMs ?? undefined));
    }
    return { value: undefined, done: true };
  }

  private async pause(wait: { promise: Promise<void>; cancel(): void }): Promise<void> {
    this.cancelWait = wait.cancel;
    await wait.promise;
    this.cancelWait = undefined;
  }

  /**
   * One turn of the consumer, one statement (it was three round trips when there was nothing to
   * do, and six for each wake of the fan-out): claims up to `limit` due rows, feeds the group
   * (moves its cursor on over the log, adding the matching events after it) and claims what it
   * added up to what room is left, and tells when the next retry falls due. Answers how many events
   * it handed into the buffer, how many it added to the group (added beyond the room, they are
   * claimable at once), and the due time (meaningful when both are 0: the statement then changed
   * nothing, and its snapshot is the group as it stands).
   *
   * Feeding: the group row is locked with SKIP LOCKED (none locked: another consumer is feeding,
   * and what it adds is claimable in a moment), the page after the cursor and the head are read in
   * one snapshot, the page is added and the cursor moved. The cursor the lock returns may be newer
   * than that snapshot (a feeder that committed in between): the page is then empty or after it, and
   * the cursor only ever moves forward (the UPDATE's condition is checked again on the locked row),
   * so nothing is added twice or skipped. Claims use FOR UPDATE SKIP LOCKED on the rows, so two
   * consumers never take the same row.
   */
  private async claimAndFeed(limit: number): Promise<{ handed: number; fed: number; dueInMs: number | null }> {
    const where = filterSql(this.settings.filter, 6);
    const claimedUntil = 'clock_timestamp() + make_interval(secs => $3::double precision / 1000)';
    // A named statement: planning this one took longer than running it, at every turn.
    const result = await preparedQuery<EventRow & { retry_count: number; fed: number; ms: number | null }>(
      this.pool,
      `WITH due AS (
         UPDATE csr_group_events g SET claimed_by = $2, claimed_until = ${claimedUntil}
         FROM (
           SELECT seq FROM csr_group_events
           WHERE grp = $1 AND NOT parked AND due_at <= clock_timestamp() AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
           ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED
         ) c
         WHERE g.grp = $1 AND g.seq = c.seq
         RETURNING g.seq, g.retry_count
       ), g AS (
         SELECT cursor FROM csr_groups WHERE name = $1 FOR UPDATE SKIP LOCKED
       ), page AS (
         SELECT h.seq AS head, e.seq, row_number() OVER (ORDER BY e.seq) AS n FROM g CROSS JOIN ${HEAD} h LEFT JOIN LATERAL (
           SELECT seq FROM csr_events WHERE seq > g.cursor AND seq <= h.seq${where.sql} ORDER BY seq LIMIT $5
         ) e ON true
       ), added AS (
         INSERT INTO csr_group_events (grp, seq, claimed_by, claimed_until)
         SELECT $1, p.seq, CASE WHEN p.n <= r.room THEN $2 END, CASE WHEN p.n <= r.room THEN ${claimedUntil} END
         FROM page p CROSS JOIN (SELECT $4 - count(*) AS room FROM due) r WHERE p.seq IS NOT NULL
         ON CONFLICT DO NOTHING
         RETURNING seq, retry_count, claimed_by
       ), moved AS (
         UPDATE csr_groups c SET cursor = n.next
         FROM (SELECT CASE WHEN count(seq) = $5 THEN max(seq) ELSE max(head) END AS next FROM page) n
         WHERE c.name = $1 AND n.next > c.cursor
       ), handed AS (
         SELECT seq, retry_count FROM due UNION ALL SELECT seq, retry_count FROM added WHERE claimed_by IS NOT NULL
       )
       SELECT t.fed, t.ms, c.retry_count, ${COLUMNS.split(', ').map((column) => `e.${column}`).join(', ')}
       FROM (
         SELECT (SELECT count(seq) FROM page)::integer AS fed,
           (SELECT (extract(epoch FROM min(due_at) - clock_timestamp()) * 1000)::double precision
            FROM csr_group_events WHERE grp = $1 AND NOT parked AND claimed_by IS NULL) AS ms
       ) t LEFT JOIN (handed c JOIN csr_events e ON e.seq = c.seq) ON true
       ORDER BY e.seq`,
      [this.group, this.me, this.settings.claimMs, limit, FEED_PAGE, ...where.values],
    );
    const first = result.rows[0];
    const fed = first?.fed ?? 0;
    const ms = first?.ms;
    const dueInMs = ms === null || ms === undefined ? null : Math.max(0, Math.ceil(ms));
    if (this.closed) return { handed: 0, fed, dueInMs };
    let handed = 0;
    for (const row of result.rows) {
      if (row.seq === null) continue;
      this.mine.add(row.seq);
      this.buffer.push(this.delivery(row.seq, rowEvent(row), row.retry_count));
      handed += 1;
    }
    return { handed, fed, dueInMs };
  }

  private async renew(): Promise<void> {
    if (this.closed || this.mine.size === 0) return;
    await this.pool
      .query(
        'UPDATE csr_group_events SET claimed_until = clock_timestamp() + make_interval(secs => $3::double precision / 1000) WHERE grp = $1 AND claimed_by = $2',
        [this.group, this.me, this.settings.claimMs],
      )
      .catch(() => undefined);
  }

  /**
   * Deletes `seq` with the other acks of this turn in one statement: a consumer acks a batch at
   * once, and a commit per event (each waiting for its own WAL flush) was most of the fan-out's
   * cost on the server. Each ack still resolves only once its row is gone.
   */
  private ackTogether(seq: string): Promise<void> {
    if (!this.acks) {
      const seqs: string[] = [];
      const deleted = Promise.resolve().then(async () => {
        this.acks = null;
        const { rowCount } = await preparedQuery(this.pool, 'DELETE FROM csr_group_events WHERE grp = $1 AND seq = ANY($2::bigint[])', [this.group, seqs]);
        groupRowsDeleted(this.pool, rowCount ?? 0);
      });
      this.acks = { seqs, deleted };
    }
    this.acks.seqs.push(seq);
    return this.acks.deleted;
  }

  private delivery(seq: string, event: RecordedEvent, retryCount: number): PersistentEvent {
    let settled = false;
    const settle = async (sql: string | null, values: unknown[]) => {
      if (settled) return;
      settled = true;
      const wasFull = this.mine.size >= this.settings.bufferSize;
      this.mine.delete(seq);
      // Settled after close (work done meanwhile) is still written; the store may be gone by then.
      const writing = sql === null ? this.ackTogether(seq) : this.pool.query(sql, [this.group, seq, ...values]);
      if (this.closed) return void (await writing.catch(() => undefined));
      await writing;
      // This consumer, when it waits for room, or a consumer of this process waiting for a due time
      // this retry may come before, looks again. An ack that gave no consumer room changes nothing
      // they wait for (a wake per ack was a turn of the fan-out, a statement, for nothing).
      if (wasFull || sql !== null) this.notifier.nudge();
    };
    return {
      event,
      retryCount,
      ack: () => settle(null, []),
      nack: (action, reason) => {
        if (action === 'park') {
          return settle('UPDATE csr_group_events SET parked = true, reason = $3, claimed_by = NULL, claimed_until = NULL WHERE grp = $1 AND seq = $2', [reason]);
        }
        return settle(
          `UPDATE csr_group_events SET
             parked = retry_count >= $3,
             reason = CASE WHEN retry_count >= $3 THEN $4 ELSE reason END,
             retry_count = CASE WHEN retry_count >= $3 THEN retry_count ELSE retry_count + 1 END,
             due_at = clock_timestamp() + make_interval(secs => $5::double precision / 1000),
             claimed_by = NULL, claimed_until = NULL
           WHERE grp = $1 AND seq = $2`,
          [this.settings.maxRetryCount, reason, retryDelayMs(retryCount, this.settings.retryBackoff)],
        );
      },
    };
  }
}

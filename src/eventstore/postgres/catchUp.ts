import { preparedQuery, type Pool } from '../../postgres/pool.js';
import type { EventFilter, RecordedEvent, Subscription } from '../port.js';
import type { Notifier } from './notifier.js';
import { COLUMNS, filterSql, HEAD, rowEvent, type EventRow } from './rows.js';

const PAGE = 2_000;
/** Pages SharedPages keeps (the followers of one process number a handful). */
const KEPT_PAGES = 4;
/** After a failed read (the server restarting) the subscription tries again this much later. */
const RETRY_MS = 1_000;

/**
 * A catch-up subscription: pages of the log after its cursor, then live, woken by the notifier.
 * The cursor moves to the last seq read, which is safe because positions are assigned in commit
 * order (appender.ts): no transaction can later fill a seq below one already visible. A failed
 * read (a restart of the server) is tried again, from the same cursor, until it succeeds or the
 * subscription is closed: the follower sees a pause, never a gap.
 */
export class CatchUpSubscription implements Subscription {
  private cursor: string;
  private buffer: RecordedEvent[] = [];
  private closed = false;
  private cancelWait: (() => void) | undefined;
  /**
   * The notifier's generation before the last read, when that read reached the head it saw (a
   * page not full): nothing after it existed then, and an append committed since has bumped the
   * generation (it is read before the statement is sent, as the wait after an empty read relies
   * on), so once the buffer is drained the follower waits on it instead of reading again only to
   * find nothing. That read was one of a follower's two statements per wake.
   */
  private caughtUpAt: number | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly pages: SharedPages,
    private readonly notifier: Notifier,
    from: string,
    private readonly filter: EventFilter | undefined,
    private readonly onClose: (subscription: CatchUpSubscription) => void,
  ) {
    this.cursor = from;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelWait?.();
    this.onClose(this);
  }

  [Symbol.asyncIterator](): AsyncIterator<RecordedEvent> {
    return { next: () => this.next() };
  }

  private async next(): Promise<IteratorResult<RecordedEvent>> {
    while (!this.closed) {
      const buffered = this.buffer.shift();
      if (buffered) return { value: buffered, done: false };
      if (this.caughtUpAt !== undefined) {
        const caughtUpAt = this.caughtUpAt;
        this.caughtUpAt = undefined;
        await this.pause(this.notifier.wait(caughtUpAt));
        this.passOver(caughtUpAt);
        continue;
      }
      const generation = this.notifier.generation;
      let found: boolean;
      try {
        found = await this.readPage(generation);
      } catch {
        await this.pause(sleep(RETRY_MS));
        continue;
      }
      if (!found) {
        await this.pause(this.notifier.wait(generation));
        this.passOver(generation);
      }
    }
    return { value: undefined, done: true };
  }

  /**
   * After a wake, with everything up to the cursor read when the notifier stood at `generation`:
   * when the appends announced since wrote nothing this filter wants, the cursor moves past them and
   * the follower waits again without a read (notifier.ts, passOver).
   */
  private passOver(generation: number): void {
    if (this.closed || this.filter === undefined || this.buffer.length > 0) return;
    const passed = this.notifier.passOver(generation, this.cursor, this.filter);
    if (passed === undefined) return;
    this.cursor = passed.cursor;
    this.caughtUpAt = passed.generation;
  }

  private async pause(wait: { promise: Promise<void>; cancel(): void }): Promise<void> {
    this.cancelWait = wait.cancel;
    await wait.promise;
    this.cancelWait = undefined;
  }

  /** Reads the next page into the buffer; false when there was nothing new. */
  private async readPage(generation: number): Promise<boolean> {
    const page = await this.pages.read(this.pool, this.cursor, this.filter, generation);
    if (this.closed) return true;
    // The page may be another follower's too: this one's buffer is a copy it can take from.
    this.buffer = page.events.slice();
    this.cursor = page.cursor;
    if (page.events.length > 0 && !page.full) this.caughtUpAt = generation;
    return page.events.length > 0;
  }
}

/**
 * The pages this process's followers read, shared by those that ask for the same page (same
 * cursor and filter) while no wake has come since it was asked for: the projector's four followers
 * of the record streams wake together at the same cursor, and each read (and parsed) the same
 * events. A shared page is as good as a page of one's own: it holds every event after the cursor
 * up to a head (positions are given in commit order), and the generation it was asked at is the
 * follower's too, so an append committed since wakes it to read on. A few pages are kept, so that
 * a follower catching up through the log holds on to no more than that.
 */
export class SharedPages {
  private readonly pages = new Map<string, { generation: number; page: Promise<Page> }>();

  read(pool: Pool, cursor: string, filter: EventFilter | undefined, generation: number): Promise<Page> {
    const key = filter === undefined ? cursor : `${cursor} ${JSON.stringify(filter.streamPrefixes)}`;
    const kept = this.pages.get(key);
    if (kept !== undefined && kept.generation === generation) return kept.page;
    const page = readAfter(pool, cursor, filter, PAGE);
    this.pages.delete(key);
    this.pages.set(key, { generation, page });
    if (this.pages.size > KEPT_PAGES) this.pages.delete(this.pages.keys().next().value!);
    // A failed read is not handed to the next follower: it reads for itself.
    page.catch(() => {
      if (this.pages.get(key)?.page === page) this.pages.delete(key);
    });
    return page;
  }
}

interface Page {
  events: RecordedEvent[];
  cursor: string;
  full: boolean;
}

/**
 * Events after seq `cursor` matching `filter`, with the cursor to continue from: the last seq read
 * when the page is full, else the log's head as the same statement saw it (the head row and the
 * events are written in one transaction, so one snapshot sees both or neither), which lets a
 * filtered follower move past a stretch of events it does not want without reading it again.
 */
export async function readAfter(pool: Pool, cursor: string, filter: EventFilter | undefined, limit: number): Promise<Page> {
  const statement = readAfterStatement(cursor, filter, limit);
  const result = await preparedQuery<EventRow & { head: string }>(pool, statement.sql, statement.values);
  const rows = result.rows.filter((row) => row.seq !== null);
  const head = result.rows[0]?.head ?? cursor;
  const events = rows.map(rowEvent);
  const full = rows.length === limit;
  const next = full ? rows.at(-1)!.seq : BigInt(head) > BigInt(cursor) ? head : cursor;
  return { events, cursor: next, full };
}

/** The statement of readAfter (with the head it saw on every row). */
export function readAfterStatement(cursor: string, filter: EventFilter | undefined, limit: number): { sql: string; values: unknown[] } {
  const where = filterSql(filter, 3);
  return {
    sql: `SELECT h.seq AS head, e.* FROM ${HEAD} h LEFT JOIN LATERAL (
       SELECT ${COLUMNS} FROM csr_events WHERE seq > $1 AND seq <= h.seq${where.sql} ORDER BY seq LIMIT $2
     ) e ON true`,
    values: [cursor, limit, ...where.values],
  };
}

/** A wait that close() can cut short. */
export function sleep(ms: number): { promise: Promise<void>; cancel(): void } {
  let cancel!: () => void;
  const promise = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    cancel = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { promise, cancel };
}

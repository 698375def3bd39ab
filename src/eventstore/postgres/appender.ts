import { Conflict } from '../../core/errors.js';
import pg, { type QueryResult } from 'pg';
import { namedStatementRefused, transactionQuery, type Pool, type PoolClient } from '../../postgres/pool.js';
import { canonicalJson, canonicalMetadataOnce, chainHashOfJson, storedMetadataJson } from '../chain.js';
import { isClaimStream, type AppendResult, type ExpectedRevision, type StreamAppend } from '../port.js';
import { announcementPayload, kindOf, type Announcement } from './announcement.js';
import { asStoreError } from './errors.js';
import { seqPosition } from './rows.js';

/**
 * Appends to the PostgreSQL log. Every append transaction first locks the one head row
 * (`SELECT ... FOR UPDATE`) and assigns positions under that lock, so positions are handed out in
 * commit order: a transaction that took seq n has committed (or rolled back) before the next one
 * can read the head. A reader that sees seq n therefore sees every seq below it, and a follower
 * that moves its cursor to the highest seq it read can never pass one that a slower transaction
 * fills later, which a sequence (values taken at insert, committed in any order) cannot promise.
 * The same lock gives the log-scoped hash chain its previous hash and keeps commit times in order.
 *
 * The lock is the price: appends commit one transaction at a time. This process queues the appends
 * that arrive while its transaction runs and writes them in the next one together (one commit,
 * one fsync, one round of the lock), each checked against its expected revision on its own, so one
 * conflicting append fails alone.
 */

/** One call: its groups in order; the first must succeed for the others to be tried (appendThen). */
interface Job {
  groups: StreamAppend[][];
  resolve(result: { first: AppendResult; then: PromiseSettledResult<AppendResult>[] }): void;
  reject(error: unknown): void;
}

const MAX_JOBS_PER_COMMIT = 500;

export const NOTIFY_CHANNEL = 'csr_events';

export class Appender {
  private queue: Job[] = [];
  private running = false;
  private readonly canonicalMetadata = canonicalMetadataOnce();
  /** What the transaction being written will announce once committed (null: it wrote nothing). */
  private written: Announcement | null = null;

  /** `committed` hears of every commit before its appends' callers do (to wake this process's followers). */
  constructor(
    private readonly pool: Pool,
    private readonly committed: (announcement: Announcement) => void,
  ) {}

  enqueue(groups: StreamAppend[][]): Promise<{ first: AppendResult; then: PromiseSettledResult<AppendResult>[] }> {
    return new Promise((resolve, reject) => {
      this.queue.push({ groups, resolve, reject });
      if (!this.running) void this.run();
    });
  }

  /** Resolves once every queued append has been written or failed. */
  async drain(): Promise<void> {
    while (this.running || this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const jobs = this.queue.splice(0, MAX_JOBS_PER_COMMIT);
        try {
          const settle = await this.commit(jobs);
          settle();
        } catch (error) {
          const mapped = asStoreError(error);
          for (const job of jobs) job.reject(mapped);
        }
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Writes the jobs in one transaction; answers how to settle their promises once committed. A
   * transaction whose named statement the server refused wrote nothing: it runs again, plain.
   */
  private async commit(jobs: Job[]): Promise<() => void> {
    try {
      return await this.commitOnce(jobs);
    } catch (error) {
      if (!namedStatementRefused(this.pool, error)) throw error;
      return this.commitOnce(jobs);
    }
  }

  private async commitOnce(jobs: Job[]): Promise<() => void> {
    const client = await this.pool.connect();
    let broken: unknown;
    try {
      try {
        this.written = null;
        const settle = await this.write(client, jobs);
        await client.query('COMMIT');
        if (this.written !== null) this.committed(this.written);
        return settle;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
        throw error;
      }
    } catch (error) {
      broken ??= error;
      throw error;
    } finally {
      // A connection whose transaction state is unknown is not handed to anyone else.
      client.release(broken instanceof Error && isConnectionLevel(broken) ? broken : undefined);
    }
  }

  private async write(client: PoolClient, jobs: Job[]): Promise<() => void> {
    const streams = [...new Set(jobs.flatMap((job) => job.groups.flatMap((group) => group.map((append) => append.stream))))];
    // BEGIN, the head's lock and the streams' revisions in one round trip: three statements of one
    // simple query, each with a snapshot of its own, so the revisions are read after the lock was
    // granted and see every append committed before it (a single statement's snapshot would be
    // taken before its wait for the lock). The stream names go in as escaped literals (a simple
    // query has no parameters).
    const [, locked, found] = (await client.query(
      `BEGIN;
       SELECT seq, hash, created_ms, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms FROM csr_event_head WHERE one FOR UPDATE;
       ${revisionsStatement(streams)}`,
    )) as unknown as [unknown, QueryResult<{ seq: string; hash: string; created_ms: string; now_ms: string }>, QueryResult<{ stream: string; revision: number | null }>];
    const head = locked.rows[0]!;
    const revisions = new Map<string, number>();
    for (const row of found.rows) if (row.revision !== null) revisions.set(row.stream, row.revision);

    // Commit times never go backwards along the log, even when the server's clock does.
    const created = Math.max(Number(head.now_ms), Number(head.created_ms));
    const rows = new Rows();
    // Claim streams go to their own table (schema.ts): no seq, no place in the chain.
    const claims = new ClaimRows();
    let seq = Number(head.seq);
    let hash = head.hash;
    const outcomes: Array<() => void> = [];
    for (const job of jobs) {
      const results: Array<PromiseSettledResult<AppendResult>> = [];
      let firstFailed: unknown;
      for (const [index, group] of job.groups.entries()) {
        const changed = new Map<string, number>();
        const mark = rows.length;
        const claimsMark = claims.length;
        let result: AppendResult | undefined;
        try {
          for (const append of group) {
            const current = changed.has(append.stream) ? changed.get(append.stream) : revisions.get(append.stream);
            checkExpected(append.stream, append.expectedRevision, current);
            let revision = current ?? -1;
            const claim = isClaimStream(append.stream);
            for (const event of append.events) {
              revision += 1;
              if (claim) {
                claims.push(append.stream, revision, event.id, event.type, JSON.stringify(event.data), this.canonicalMetadata(event.metadata));
                continue;
              }
              seq += 1;
              const data = canonicalJson(event.data);
              const metadata = this.canonicalMetadata(event.metadata);
              hash = chainHashOfJson(hash, { id: event.id, stream: append.stream, revision, type: event.type, created, data, metadata });
              rows.push(seq, event.id, append.stream, revision, event.type, data, storedMetadataJson(metadata, hash));
            }
            changed.set(append.stream, revision);
            result = { position: seqPosition(seq), nextRevision: revision };
          }
        } catch (error) {
          // The group's rows go, and the chain and positions continue from before it.
          rows.truncate(mark);
          claims.truncate(claimsMark);
          seq = mark === 0 ? Number(head.seq) : rows.seq[mark - 1]!;
          hash = mark === 0 ? head.hash : rows.hash(mark - 1);
          if (index === 0) {
            firstFailed = error;
            break;
          }
          results.push({ status: 'rejected', reason: error });
          continue;
        }
        for (const [stream, revision] of changed) revisions.set(stream, revision);
        results.push({ status: 'fulfilled', value: result! });
      }
      if (firstFailed !== undefined) outcomes.push(() => job.reject(firstFailed));
      else outcomes.push(() => job.resolve({ first: (results[0] as PromiseFulfilledResult<AppendResult>).value, then: results.slice(1) }));
    }
    // The claims go in the log's statement (a CTE) when there are log rows, else alone.
    const claimed = (first: number, created: string) =>
      `INSERT INTO csr_claims (stream, revision, id, type, created_ms, data, metadata)
       SELECT u.st, u.r, u.i, u.t, ${created}::bigint, d.value, m.value
       FROM unnest($${first}::text[], $${first + 1}::integer[], $${first + 2}::text[], $${first + 3}::text[]) WITH ORDINALITY AS u(st, r, i, t, n)
       JOIN json_array_elements($${first + 4}::json) WITH ORDINALITY AS d(value, n) ON d.n = u.n
       JOIN json_array_elements($${first + 5}::json) WITH ORDINALITY AS m(value, n) ON m.n = u.n`;
    const claimValues = [claims.streams, claims.revisions, claims.ids, claims.types, `[${claims.data.join(',')}]`, `[${claims.metadata.join(',')}]`];
    if (claims.length > 0 && rows.length === 0) await transactionQuery(this.pool, client, claimed(1, '$7'), [...claimValues, created]);
    if (rows.length > 0) {
      this.written = { from: Number(head.seq), to: seq, kinds: [...new Set(rows.streams.map(kindOf))] };
      // Data and metadata go in as two JSON arrays made by joining their texts, not as json[]: the
      // driver writes an array parameter element by element, escaping every quote of every JSON
      // text (docs/performance.md, session 32). A json value's elements keep their very text,
      // which the chain check hashes without parsing.
      const result = await transactionQuery<{ written: number }>(
        this.pool,
        client,
        `WITH ${claims.length > 0 ? `claimed AS (${claimed(12, '$6')}), ` : ''}written AS (
           INSERT INTO csr_events (seq, id, stream, revision, type, created_ms, data, metadata)
           SELECT u.s, u.i, u.st, u.r, u.t, $6, d.value, m.value
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::integer[], $5::text[]) WITH ORDINALITY AS u(s, i, st, r, t, n)
           JOIN json_array_elements($7::json) WITH ORDINALITY AS d(value, n) ON d.n = u.n
           JOIN json_array_elements($8::json) WITH ORDINALITY AS m(value, n) ON m.n = u.n
           RETURNING 1
         ), moved AS (
           UPDATE csr_event_head SET seq = $9, hash = $10, created_ms = $6 WHERE one
         )
         SELECT pg_notify('${NOTIFY_CHANNEL}', $11), (SELECT count(*) FROM written)::integer AS written`,
        [rows.seq, rows.ids, rows.streams, rows.revisions, rows.types, created, `[${rows.data.join(',')}]`, `[${rows.metadata.join(',')}]`, seq, hash, announcementPayload(this.written), ...(claims.length > 0 ? claimValues : [])],
      );
      // The head moved to the last seq whatever was inserted: a short insert would leave a hole.
      const { written } = result.rows[0]!;
      if (written !== rows.length) throw new Error(`the log took ${written} of ${rows.length} events`);
    }
    return () => {
      for (const outcome of outcomes) outcome();
    };
  }

}

/** Events of one commit, column by column (unnest takes one array per column). */
abstract class Columns {
  streams: string[] = [];
  revisions: number[] = [];
  ids: string[] = [];
  types: string[] = [];
  data: string[] = [];
  metadata: string[] = [];

  get length(): number {
    return this.streams.length;
  }

  truncate(length: number): void {
    for (const column of this.columns()) column.length = length;
  }

  protected add(stream: string, revision: number, id: string, type: string, data: string, metadata: string): void {
    this.streams.push(stream);
    this.revisions.push(revision);
    this.ids.push(id);
    this.types.push(type);
    this.data.push(data);
    this.metadata.push(metadata);
  }

  protected columns(): unknown[][] {
    return [this.streams, this.revisions, this.ids, this.types, this.data, this.metadata];
  }
}

/** The log's rows of one commit: each at its seq, its metadata carrying its hash. */
class Rows extends Columns {
  seq: number[] = [];
  private readonly hashes: string[] = [];

  push(seq: number, id: string, stream: string, revision: number, type: string, data: string, metadata: string): void {
    this.seq.push(seq);
    this.hashes.push(metadata.slice(-66, -2));
    this.add(stream, revision, id, type, data, metadata);
  }

  hash(index: number): string {
    return this.hashes[index]!;
  }

  protected override columns(): unknown[][] {
    return [...super.columns(), this.seq, this.hashes];
  }
}

/** The claims of one commit (no seq, no hash). */
class ClaimRows extends Columns {
  push(stream: string, revision: number, id: string, type: string, data: string, metadata: string): void {
    this.add(stream, revision, id, type, data, metadata);
  }
}

/**
 * The last revision of each of `streams` that has events (as escaped literals: it goes in a simple
 * query). Per stream: the index's last entry, not every revision's (max() over a GROUP BY reads them
 * all; a counter stream written at every create made each append slower as the log grew).
 */
export function revisionsStatement(streams: readonly string[]): string {
  const of = (table: string, names: readonly string[]) =>
    `SELECT s.stream, (SELECT e.revision FROM ${table} e WHERE e.stream = s.stream ORDER BY e.revision DESC LIMIT 1) AS revision
    FROM unnest(ARRAY[${names.map((stream) => pg.escapeLiteral(stream)).join(', ')}]::text[]) AS s (stream)`;
  const claims = streams.filter(isClaimStream);
  const logStreams = streams.filter((stream) => !isClaimStream(stream));
  if (claims.length === 0) return of('csr_events', logStreams);
  if (logStreams.length === 0) return of('csr_claims', claims);
  return `${of('csr_events', logStreams)} UNION ALL ${of('csr_claims', claims)}`;
}

function checkExpected(stream: string, expected: ExpectedRevision, actual: number | undefined): void {
  const ok =
    expected === 'any' ||
    (expected === 'no_stream' && actual === undefined) ||
    (expected === 'stream_exists' && actual !== undefined) ||
    expected === actual;
  if (!ok) throw new Conflict(stream, String(expected), actual === undefined ? 'no_stream' : String(actual));
}

/** Errors after which the connection itself is in doubt (it must not go back to the pool). */
function isConnectionLevel(error: Error): boolean {
  return !('severity' in error) || /terminat/i.test(error.message);
}

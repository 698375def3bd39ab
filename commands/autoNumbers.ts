import { newId } from '../src/core/ids.js';
import { Conflict } from '../src/core/errors.js';
import { inFlight } from '../src/core/inFlight.js';
import { asGroup, CLAIM_STREAM_PREFIXES, type AppendGroup, type AppendResult, type EventMetadata, type EventStore, type StreamAppend } from '../src/eventstore/port.js';
import { formatAutoNumber } from '../src/schema/catalogue.js';
import type { ObjectDef } from '../src/schema/types.js';
import { fieldsKey, reservationStream } from './reservations/keys.js';
import { reservationState } from './reservations/reservation.js';
import { claimAppend, type ReservationScope } from './reservations/store.js';
import { auditNumbers, type AuditOutcome } from './numberAudit/audit.js';

/**
 * Gap-free auto numbers per workspace and object. A counter stream records every reservation;
 * optimistic concurrency on it makes concurrent reservations take consecutive, never overlapping,
 * blocks, also across API processes. The records that use a block are appended with its
 * reservation (appendThen): the embedded store commits both at once, and no record is ever
 * written with numbers whose reservation failed.
 *
 * Within one process the requests of one turn of the event loop, and those that arrive while a
 * reservation is being written, are served together by one reservation: 32 concurrent writers
 * cost one commit instead of a storm of conflicts. Numbers are reserved only after every record
 * of a request has been validated: a number is lost only if a record's own append fails.
 *
 * Values are unique per workspace and object, also those a client sets by hand: every value,
 * assigned or set, holds a reservation stream (commands/reservations). The counter skips a number
 * whose value is held, and each assigned number's claim is appended in one group with its record,
 * so a value set by hand at the same moment makes that record fail with a Conflict (and try again
 * with the next number) rather than share the value.
 *
 * A request may bring claims that must hold before it takes a number (a create's match key: one
 * that loses it to another record updates that record instead, and must not use up a number).
 * Where the store writes a group all or none (atomicGroups), they join the reservation in one
 * group: the claims, the reservation and the records commit together, one commit per create, and a
 * claim that conflicts writes nothing at all; its request alone fails with the Conflict and the
 * others try again at once. Elsewhere the caller writes them on its own before asking for a number.
 *
 * Where a reservation and the records that use it are separate appends (EventStoreDB: no atomic
 * groups), a writer that dies between them leaves numbers no record took. There the counter is
 * audited (numberAudit/audit.ts) when this process first takes a number of it, then at most once
 * per AUDIT_EVERY_MS while it takes numbers, and again once a block too young to judge is old
 * enough: each number no record took is recorded as a NumberSkipped event with its reason.
 */

/** A claim stream (src/eventstore/port.ts): the embedded store keeps it beside the log. */
export function counterStream(workspaceId: string, object: string): string {
  return `${CLAIM_STREAM_PREFIXES[1]}${workspaceId}-${object}`;
}

/** A number given to one record, with the claim of its value that goes in one group before that record. */
export interface AssignedNumber {
  value: string;
  claim(recordId: string): StreamAppend;
}

/** Builds the groups that use the numbers given; called again with other numbers after a conflict. */
export type UseNumbers = (assigned: AssignedNumber[]) => AppendGroup[];

/** The object's auto-number field. */
export interface NumberedField {
  object: ObjectDef;
  field: string;
  prefix: string;
}

interface Waiter {
  count: number;
  /** Written in one group with the reservation (the store's atomicGroups): none or all with it. */
  claims: StreamAppend[];
  metadata: EventMetadata;
  use: UseNumbers;
  resolve(outcomes: PromiseSettledResult<AppendResult>[]): void;
  reject(error: unknown): void;
}

/** A counter stream as this process last wrote or read it. */
interface Counter {
  revision: number;
  last: number;
}

export interface AutoNumbersOptions {
  /** Audit counters for numbers no record took (default: where groups are not atomic, i.e. EventStoreDB). */
  audit?: boolean;
  now?: () => Date;
  /** Told when an audit fails (it runs again with the next number taken). */
  report?: (error: unknown) => void;
}

/** How often, at most, one process audits one counter while it takes numbers. */
export const AUDIT_EVERY_MS = 30_000;

/** Reads of a block's number values at once (see freeNumbers): a few of a server store's pooled connections. */
const READS_IN_FLIGHT = 4;

interface AuditState {
  running: Promise<void> | null;
  lastRun: number;
  timer: NodeJS.Timeout | null;
}

export class AutoNumbers {
  private readonly queues = new Map<string, Waiter[]>();
  /**
   * The counters this process wrote last: the next reservation appends after them without reading
   * the stream again. Another process's reservation meanwhile fails that append with a Conflict
   * (expected revision), and the counter is read again.
   */
  private readonly counters = new Map<string, Counter>();

  /**
   * Counters that met a number already held (a value set by hand ahead of the counter): their
   * blocks read each number's reservation stream first, as every block does where groups are not
   * all or none. See `reserveBlock`.
   */
  private readonly readFirst = new Set<string>();

  private readonly audits = new Map<string, AuditState>();
  private readonly auditing: boolean;
  private readonly now: () => Date;

  constructor(
    private readonly events: EventStore,
    private readonly options: AutoNumbersOptions = {},
  ) {
    this.auditing = options.audit ?? !events.atomicGroups;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Audits the counter of this workspace and object now, through every block old enough (after
   * the run under way, if any): `csr numbers skipped` lists complete, and tests. Does nothing where
   * numbers cannot be skipped (atomic groups). The server runs it by itself as it takes numbers.
   */
  async audit(workspaceId: string, numbered: NumberedField): Promise<void> {
    if (!this.auditing) return;
    const stream = counterStream(workspaceId, numbered.object.key);
    await this.auditState(stream).running;
    while ((await this.runAudit(stream, workspaceId, numbered)).more);
  }

  private auditState(stream: string): AuditState {
    let state = this.audits.get(stream);
    if (!state) this.audits.set(stream, (state = { running: null, lastRun: -Infinity, timer: null }));
    return state;
  }

  /** After a reservation: audit when this process has not lately (the first time at once). */
  private auditSoon(stream: string, workspaceId: string, numbered: NumberedField): void {
    if (!this.auditing) return;
    const state = this.auditState(stream);
    if (state.running || state.timer || this.now().getTime() - state.lastRun < AUDIT_EVERY_MS) return;
    void this.runAudit(stream, workspaceId, numbered);
  }

  private runAudit(stream: string, workspaceId: string, numbered: NumberedField): Promise<AuditOutcome> {
    const state = this.auditState(stream);
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
    state.lastRun = this.now().getTime();
    const scope = { events: this.events, workspaceId, object: numbered.object.key, field: numbered.field, prefix: numbered.prefix, counter: stream, now: this.now };
    const run = auditNumbers(scope).finally(() => (state.running = null));
    state.running = run.then(
      (outcome) => {
        // More blocks old enough: go on shortly; a block too young: look again once it is old enough.
        const at = outcome.more ? this.now().getTime() + 1_000 : outcome.waitUntil?.getTime();
        if (at !== undefined) {
          state.timer = setTimeout(() => void this.runAudit(stream, workspaceId, numbered), Math.max(0, at - this.now().getTime()) + 100);
          state.timer.unref();
        }
      },
      (error: unknown) => this.options.report?.(error),
    );
    return run;
  }

  /**
   * Reserves `count` consecutive numbers and appends what `use` builds from the first of them.
   * Resolves with the outcome of each built append; rejects, having written nothing, when the
   * reservation itself cannot be written.
   */
  reserveAndAppend(
    workspaceId: string,
    numbered: NumberedField,
    count: number,
    metadata: EventMetadata,
    use: UseNumbers,
    claims: StreamAppend[] = [],
  ): Promise<PromiseSettledResult<AppendResult>[]> {
    const stream = counterStream(workspaceId, numbered.object.key);
    if (claims.length > 0 && !this.events.atomicGroups) return Promise.reject(new Error('claims join a reservation only on a store with atomic groups'));
    return new Promise((resolve, reject) => {
      const waiter = { count, claims, metadata, use, resolve, reject };
      const queue = this.queues.get(stream);
      if (queue) {
        queue.push(waiter);
        return;
      }
      this.queues.set(stream, [waiter]);
      // setImmediate: the other requests handled in this turn join the same reservation.
      setImmediate(() => void this.drain(stream, workspaceId, numbered));
    });
  }

  private async drain(stream: string, workspaceId: string, numbered: NumberedField): Promise<void> {
    const queue = this.queues.get(stream)!;
    for (let batch = queue.splice(0); batch.length > 0; batch = queue.splice(0)) {
      try {
        await this.reserveBlock(stream, workspaceId, numbered, batch);
      } catch (error) {
        // Those already answered (a lost claim) keep their answer: a promise settles once.
        for (const waiter of batch) waiter.reject(error);
      }
    }
    this.queues.delete(stream);
  }

  /**
   * One reservation for the whole batch; answers each waiter with its outcomes.
   *
   * Where groups are all or none (the embedded store, PostgreSQL), the claims of the block's
   * numbers join the reservation's own group, and the numbers are presumed never claimed: their
   * claims expect no stream, without reading it (a read per number, a round trip each on a server).
   * A value held after all (set by hand ahead of the counter, or released since) fails the whole
   * group with a Conflict, so nothing is written and no number used; the block is then made again
   * from reads, which skip what is held and take what was released, and that counter is read first
   * from then on. Elsewhere (EventStoreDB) each number's claim is read, and written in its record's
   * group, as a group that fails keeps the appends before the failing one.
   */
  private async reserveBlock(stream: string, workspaceId: string, numbered: NumberedField, all: Waiter[]): Promise<void> {
    const scope: ReservationScope = { events: this.events, workspaceId, object: numbered.object, loadState: () => Promise.reject(new Error('not needed')) };
    const together = this.events.atomicGroups;
    const batch = [...all];
    while (batch.length > 0) {
      const count = batch.reduce((sum, waiter) => sum + waiter.count, 0);
      const counter = this.counters.get(stream) ?? (await this.readCounter(stream));
      const first = (counter ? counter.last : 0) + 1;
      const metadata = batch[0]!.metadata;
      const presume = together && !this.readFirst.has(stream);
      const free = presume ? presumedFree(scope, numbered, first, count, metadata) : await this.freeNumbers(scope, numbered, first, count, metadata);
      const numberClaims = new Set<StreamAppend>();
      const assigned = together ? free.assigned.map((number) => ({ value: number.value, claim: (recordId: string) => remember(numberClaims, number.claim(recordId)) })) : free.assigned;
      const used = batch.map((waiter) => waiter.use(assigned.splice(0, waiter.count)));
      // Where groups are all or none, each record's group keeps its record; its number's claim goes with the reservation.
      const built = together ? used.map((groups) => groups.map((group) => asGroup(group).filter((append) => !numberClaims.has(append)))) : used;
      // The prefix and field the values were made with: the audit makes them again.
      const data = { schemaVersion: 1, workspaceId, object: numbered.object.key, first, last: free.last, field: numbered.field, prefix: numbered.prefix };
      const reservation: StreamAppend = {
        stream,
        events: [{ id: newId(), type: 'NumbersReserved', data, metadata }],
        expectedRevision: counter ? counter.revision : 'no_stream',
      };
      const claims = [...batch.flatMap((waiter) => waiter.claims), ...numberClaims];
      try {
        // Not known until the append answers: a failure may or may not have written it.
        this.counters.delete(stream);
        const { then } = await this.events.appendThen(claims.length > 0 ? [reservation, ...claims] : reservation, built.flat());
        this.counters.set(stream, { revision: counter ? counter.revision + 1 : 0, last: free.last });
        let offset = 0;
        batch.forEach((waiter, i) => waiter.resolve(then.slice(offset, (offset += built[i]!.length))));
        this.auditSoon(stream, workspaceId, numbered);
        return;
      } catch (error) {
        if (!(error instanceof Conflict)) throw error;
        // Another process reserved meanwhile: read again. A request's claim was taken: it alone
        // fails (the last one claiming it, when several of this batch claim the same key).
        if (error.stream === stream) continue;
        // The claim failed the whole group where groups are all or none: the counter is as it was.
        if (together && counter) this.counters.set(stream, counter);
        // A number of the block is held: nothing was written; make the block again from reads.
        if ([...numberClaims].some((claim) => claim.stream === error.stream)) {
          this.readFirst.add(stream);
          continue;
        }
        const loser = batch.findLastIndex((waiter) => waiter.claims.some((claim) => claim.stream === error.stream));
        if (loser === -1) throw error;
        batch.splice(loser, 1)[0]!.reject(error);
      }
    }
  }

  private async readCounter(stream: string): Promise<Counter | null> {
    const [last] = await this.events.readStream(stream, { direction: 'backwards', maxCount: 1 });
    return last ? { revision: last.revision, last: Number(last.data['last']) } : null;
  }

  /**
   * `count` numbers from `first` on whose values nobody holds (set by hand), skipping held ones;
   * `last` is the highest number looked at, where the block ends (a skipped number is taken, not a gap).
   */
  private async freeNumbers(
    scope: ReservationScope,
    numbered: NumberedField,
    first: number,
    count: number,
    metadata: EventMetadata,
  ): Promise<{ assigned: AssignedNumber[]; last: number }> {
    const assigned: AssignedNumber[] = [];
    let n = first;
    while (assigned.length < count) {
      // The values still needed, looked at a few at a time: on a server store each look is a round
      // trip, and the block of a 1,000-record upsert took 1,000 of them one after the other. Each
      // value looked at is taken or skipped, so the block still ends at the last one taken.
      const values = Array.from({ length: count - assigned.length }, (_, i) => formatAutoNumber(numbered.prefix, n + i));
      n += values.length;
      const keys = values.map((value) => fieldsKey([numbered.field], { [numbered.field]: value })!);
      const lasts = await inFlight(keys, READS_IN_FLIGHT, (key) =>
        this.events.readStream(reservationStream(scope.workspaceId, numbered.object.key, key), { direction: 'backwards', maxCount: 1 }),
      );
      values.forEach((value, i) => {
        const state = reservationState(lasts[i]![0]);
        if (state.holder !== null) return;
        const judgement = { kind: 'free' as const, expectedRevision: state.expectedRevision };
        assigned.push({ value, claim: (recordId) => claimAppend(scope, keys[i]!, judgement, recordId, metadata) });
      });
    }
    return { assigned, last: n - 1 };
  }
}

/** `count` numbers from `first` on, each claimed as never claimed before (see `reserveBlock`). */
function presumedFree(scope: ReservationScope, numbered: NumberedField, first: number, count: number, metadata: EventMetadata): { assigned: AssignedNumber[]; last: number } {
  const assigned = Array.from({ length: count }, (_, i): AssignedNumber => {
    const value = formatAutoNumber(numbered.prefix, first + i);
    const key = fieldsKey([numbered.field], { [numbered.field]: value })!;
    return { value, claim: (recordId) => claimAppend(scope, key, NEVER_CLAIMED, recordId, metadata) };
  });
  return { assigned, last: first + count - 1 };
}

const NEVER_CLAIMED = { kind: 'free' as const, expectedRevision: 'no_stream' as const };

function remember(claims: Set<StreamAppend>, claim: StreamAppend): StreamAppend {
  claims.add(claim);
  return claim;
}

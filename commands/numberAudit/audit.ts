import { Conflict } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import { NUMBER_SKIPPED, NUMBERS_CHECKED, skippedNumbersStream, type NumberSkippedData, type NumbersCheckedData } from '../../src/events/numbers.js';
import { recordStream } from '../../src/events/records.js';
import type { EventMetadata, EventStore, NewEvent } from '../../src/eventstore/port.js';
import { formatAutoNumber } from '../../src/schema/catalogue.js';
import { fieldsKey, reservationStream } from '../reservations/keys.js';
import { CREATE_GRACE_MS } from '../reservations/reservation.js';
import { blocksToJudge, numberFate, reservedBlock, type ClaimEvent, type ReservedBlock } from './judge.js';

/**
 * The number audit: finds the numbers of a counter that no record took and records each, once, as
 * a `NumberSkipped` event with its reason (src/events/numbers.ts). Needed only where a number's
 * reservation and its record are separate appends (EventStoreDB 24: a writer that dies between
 * them leaves the number unused); AutoNumbers runs it there when it takes numbers.
 *
 * Each run goes on from the counter revision the skipped-numbers stream's last event says was
 * looked at, judges the blocks reserved since, once they are older than a create's grace period
 * (a younger block may still be getting its records from a live writer), and appends what it found
 * with that stream's expected revision: of two processes auditing at once one writes, the other
 * gets a Conflict and leaves it (nothing is recorded twice).
 */

export interface AuditScope {
  events: EventStore;
  workspaceId: string;
  object: string;
  /** The auto-number field and its prefix now (for reservations written before they kept theirs). */
  field: string;
  prefix: string;
  /** The counter stream (commands/autoNumbers.ts). */
  counter: string;
  now(): Date;
}

export interface AuditOutcome {
  /** Numbers recorded as skipped by this run. */
  skipped: NumberSkippedData[];
  /** Run again at once: the run stopped at its size limit with more blocks old enough. */
  more: boolean;
  /** Run again then: a block was too young to judge (null: none). */
  waitUntil: Date | null;
}

/** Counter events read per run, and numbers judged per run (whole blocks). */
const BLOCKS_PER_RUN = 500;
const NUMBERS_PER_RUN = 2_000;

/** Who records a skipped number: the service itself, not a person. */
const AUDIT_ACTOR = { type: 'system' as const, id: 'number-audit', name: 'number audit' };

export async function auditNumbers(scope: AuditScope): Promise<AuditOutcome> {
  const { events } = scope;
  const stream = skippedNumbersStream(scope.workspaceId, scope.object);
  const [last] = await events.readStream(stream, { direction: 'backwards', maxCount: 1 });
  const checkedThrough = last ? Number(last.data['checkedThrough']) : -1;
  const read = await events.readStream(scope.counter, { fromRevision: checkedThrough + 1, maxCount: BLOCKS_PER_RUN });
  const blocks = read.filter((event) => event.type === 'NumbersReserved').map(reservedBlock);
  const { judge, waitUntil } = blocksToJudge(blocks, scope.now(), CREATE_GRACE_MS, NUMBERS_PER_RUN);
  if (judge.length === 0) return { skipped: [], more: false, waitUntil };

  const through = judge.at(-1)!.revision;
  const skipped: NumberSkippedData[] = [];
  for (const block of judge) skipped.push(...(await skippedOf(scope, block, through)));
  const metadata = auditMetadata();
  const base = { schemaVersion: 1 as const, workspaceId: scope.workspaceId, object: scope.object, checkedThrough: through };
  const written: NewEvent[] =
    skipped.length > 0
      ? skipped.map((data) => ({ id: newId(), type: NUMBER_SKIPPED, data: { ...data }, metadata }))
      : [{ id: newId(), type: NUMBERS_CHECKED, data: { ...base } satisfies NumbersCheckedData, metadata }];
  try {
    await events.append(stream, written, { expectedRevision: last ? last.revision : 'no_stream' });
  } catch (error) {
    // Another process recorded these blocks first.
    if (error instanceof Conflict) return { skipped: [], more: false, waitUntil: null };
    throw error;
  }
  const more = waitUntil === null && (judge.length < blocks.length || read.length === BLOCKS_PER_RUN);
  return { skipped, more, waitUntil };
}

/** The numbers of one block that no record took, each with its reason. */
async function skippedOf(scope: AuditScope, block: ReservedBlock, through: number): Promise<NumberSkippedData[]> {
  const found: NumberSkippedData[] = [];
  const prefix = block.prefix ?? scope.prefix;
  const written = new Map<string, boolean>();
  for (let number = block.first; number <= block.last; number++) {
    const value = formatAutoNumber(prefix, number);
    const key = fieldsKey([scope.field], { [scope.field]: value })!;
    const claims: ClaimEvent[] = (await scope.events.readStream(reservationStream(scope.workspaceId, scope.object, key))).map((event) => ({
      type: event.type,
      recordId: String(event.data['recordId']),
    }));
    for (const { recordId } of claims) {
      if (!written.has(recordId)) written.set(recordId, (await scope.events.readStream(recordStream(recordId), { maxCount: 1 })).length > 0);
    }
    const fate = numberFate(claims, (recordId) => written.get(recordId) === true);
    if (fate === 'taken') continue;
    found.push({
      schemaVersion: 1,
      workspaceId: scope.workspaceId,
      object: scope.object,
      checkedThrough: through,
      field: scope.field,
      number,
      value,
      reason: fate,
      reservedAt: block.created.toISOString(),
    });
  }
  return found;
}

function auditMetadata(): EventMetadata {
  const actionId = newId();
  return { source: 'automation', actor: AUDIT_ACTOR, actionId, correlationId: actionId, causationId: actionId };
}

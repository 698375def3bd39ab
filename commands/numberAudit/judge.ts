import type { RecordedEvent } from '../../src/eventstore/port.js';
import type { SkipReason } from '../../src/events/numbers.js';

/**
 * The pure half of the number audit (audit.ts): which reserved blocks may be judged yet, and what
 * became of one number. Table-tested in test/commands/numberAudit.test.ts.
 */

/** One `NumbersReserved` of a counter stream: the numbers first..last, reserved at `created`. */
export interface ReservedBlock {
  revision: number;
  first: number;
  last: number;
  /** The prefix the values were formatted with; null on reservations written before it was kept. */
  prefix: string | null;
  created: Date;
}

export function reservedBlock(event: RecordedEvent): ReservedBlock {
  const prefix = event.data['prefix'];
  return {
    revision: event.revision,
    first: Number(event.data['first']),
    last: Number(event.data['last']),
    prefix: typeof prefix === 'string' ? prefix : null,
    created: event.created,
  };
}

export interface BlocksToJudge {
  /** The blocks judged now, in counter order. */
  judge: ReservedBlock[];
  /** When the first block too young to judge becomes old enough (null: none left of those given). */
  waitUntil: Date | null;
}

/**
 * The blocks old enough to judge: a block younger than `graceMs` may still be getting its records
 * (its writer alive and appending), so judging stops at the first young one, as the audit's
 * checkpoint cannot pass it. At most about `maxNumbers` numbers (whole blocks, and at least one),
 * so that a long unaudited counter is audited a slice at a time.
 */
export function blocksToJudge(blocks: ReservedBlock[], now: Date, graceMs: number, maxNumbers: number): BlocksToJudge {
  const judge: ReservedBlock[] = [];
  let numbers = 0;
  for (const block of blocks) {
    const ripe = block.created.getTime() + graceMs;
    if (ripe > now.getTime()) return { judge, waitUntil: new Date(ripe) };
    if (judge.length > 0 && numbers + count(block) > maxNumbers) break;
    judge.push(block);
    numbers += count(block);
  }
  return { judge, waitUntil: null };
}

function count(block: ReservedBlock): number {
  return Math.max(0, block.last - block.first + 1);
}

/** A reservation stream's event as the audit reads it. */
export interface ClaimEvent {
  type: string;
  recordId: string;
}

/**
 * What became of a number, from its value's reservation stream (commands/reservations) and
 * whether the records it names were written. A number is taken when a record that exists (or
 * existed: a deleted record keeps its stream) ever held its value: its own create, or a client who
 * set the value by hand (the counter skips those). No claim at all: nobody ever took the value.
 */
export function numberFate(claims: ClaimEvent[], written: (recordId: string) => boolean): 'taken' | SkipReason {
  const holders = claims.filter((claim) => claim.type === 'ValueReserved').map((claim) => claim.recordId);
  if (holders.length === 0) return 'unclaimed';
  return holders.some(written) ? 'taken' : 'unwritten';
}

/**
 * Skipped auto numbers (issue 39 item 2): a number reserved from its counter that no record took.
 * The embedded and PostgreSQL stores write a number's reservation, its value's claim and its record
 * in one transaction, so there none can be skipped and this stream stays empty. EventStoreDB 24
 * appends them one after another: a process that dies between them leaves a number without a
 * record, and the write side (commands/numberAudit.ts) records each such number here, once, with
 * its reason, for operators (`csr numbers skipped`) and auditors. Not a record stream: webhooks and
 * the change feed (which follow `record-` streams) never see it.
 */

export const SKIPPED_NUMBERS_STREAM_PREFIX = 'skippednumbers-';

export function skippedNumbersStream(workspaceId: string, object: string): string {
  return `${SKIPPED_NUMBERS_STREAM_PREFIX}${workspaceId}-${object}`;
}

/** One number no record took. */
export const NUMBER_SKIPPED = 'NumberSkipped';
/** Blocks of the counter looked at up to a revision, none skipped: where the next look starts. */
export const NUMBERS_CHECKED = 'NumbersChecked';

/**
 * - `unclaimed`: reserved, and its value was never claimed: the writer stopped (or its append
 *   failed) after the reservation, before the record's claim and the record.
 * - `unwritten`: its value was claimed for a record that was never written: the writer stopped (or
 *   the record's append failed) between the claim and the record.
 */
export type SkipReason = 'unclaimed' | 'unwritten';

export const SKIP_REASONS: Record<SkipReason, string> = {
  unclaimed: 'reserved, but its record was never written (the writer stopped before claiming the value)',
  unwritten: 'its value was claimed for a record that was never written (the writer stopped before the record)',
};

interface NumbersEventBase {
  schemaVersion: 1;
  workspaceId: string;
  object: string;
  /** The counter's revision up to which its blocks have been looked at (included). */
  checkedThrough: number;
}

export interface NumberSkippedData extends NumbersEventBase {
  field: string;
  number: number;
  /** The value the number stands for (prefix and digits), e.g. CL-07505. */
  value: string;
  reason: SkipReason;
  /** When the number was reserved (the reservation's commit time, ISO 8601). */
  reservedAt: string;
}

export type NumbersCheckedData = NumbersEventBase;

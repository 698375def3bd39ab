import { NUMBER_SKIPPED, SKIP_REASONS, skippedNumbersStream, type NumberSkippedData } from '../src/events/numbers.js';
import type { EventStore } from '../src/eventstore/port.js';

/**
 * The auto numbers no record took, as the number audit recorded them (src/events/numbers.ts):
 * `csr numbers skipped`. Always empty on the embedded and PostgreSQL stores, where a number is
 * written only together with its record.
 */

export interface SkippedNumber {
  object: string;
  value: string;
  number: number;
  reason: NumberSkippedData['reason'];
  /** The reason in words. */
  explanation: string;
  /** When the number was reserved. */
  reservedAt: string;
  /** When the audit found it and recorded it. */
  recordedAt: string;
}

/** Per object given (in that order), its skipped numbers in number order. */
export async function listSkippedNumbers(events: EventStore, workspaceId: string, objects: string[]): Promise<SkippedNumber[]> {
  const found: SkippedNumber[] = [];
  for (const object of objects) {
    const stream = await events.readStream(skippedNumbersStream(workspaceId, object));
    const skipped = stream
      .filter((event) => event.type === NUMBER_SKIPPED)
      .map((event) => {
        const data = event.data as unknown as NumberSkippedData;
        return {
          object,
          value: data.value,
          number: data.number,
          reason: data.reason,
          explanation: SKIP_REASONS[data.reason] ?? data.reason,
          reservedAt: data.reservedAt,
          recordedAt: event.created.toISOString(),
        };
      });
    found.push(...skipped.sort((a, b) => a.number - b.number));
  }
  return found;
}

import { newId } from '../src/core/ids.js';
import type { EventStore } from '../src/eventstore/port.js';

/**
 * The date (UTC) of the reactors' last daily pass, kept in the log (one event per pass), so that
 * a restart the same day does not read every client of every workspace again.
 */

const STREAM = 'reactors-dailypass';

export async function lastDailyPass(events: EventStore): Promise<string | null> {
  const [last] = await events.readStream(STREAM, { direction: 'backwards', maxCount: 1 });
  const date = last?.data['date'];
  return typeof date === 'string' ? date : null;
}

export async function recordDailyPass(events: EventStore, date: string): Promise<void> {
  const actionId = newId();
  await events.append(
    STREAM,
    [
      {
        id: newId(),
        type: 'DailyPassDone',
        data: { schemaVersion: 1, date },
        metadata: { source: 'automation', actor: { type: 'system', id: 'daily-pass', name: 'daily pass' }, actionId, correlationId: actionId, causationId: actionId },
      },
    ],
    { expectedRevision: 'any' },
  );
}

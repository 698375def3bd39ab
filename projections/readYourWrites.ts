import { Unavailable } from '../src/core/errors.js';
import { comparePositions, type Position } from '../src/eventstore/position.js';
import { RECORDS_PROJECTION, type ReadStore } from '../src/readstore/port.js';
import { rollupDepthFrom } from '../src/schema/calculated.js';
import { appendedCheckpoint } from './projection.js';
import { ROLLUPS_REACTOR } from './rollupReactor.js';

/**
 * Read your writes (docs/design.md): a 2xx answer to a write is sent once the read models show
 * it. The commands get this as `waitVisible` (commands/deps.ts) from the api role (src/service.ts).
 */

/** How long a write waits for the read models to show it before answering 503. */
export const VISIBILITY_TIMEOUT_MS = 10_000;

/**
 * Read your writes, roll-ups included: the records projection has passed the write; and when the
 * written object feeds roll-ups, the roll-up reactor has reacted to it and the records projection
 * shows what it appended, level by level (invoice line -> invoice -> client), up to the deepest
 * cascade. Once the reactor has passed the write, what it appended for it is at or before the
 * last position it appended (its `.appended` checkpoint): the projection is waited for up to there.
 */
export async function waitVisible(readStore: ReadStore, position: Position, object?: string): Promise<void> {
  const deadline = Date.now() + VISIBILITY_TIMEOUT_MS;
  const waitFor = async (name: string, at: Position) => {
    if (!(await readStore.waitForCheckpoint(name, at, Math.max(1, deadline - Date.now())))) {
      throw new Unavailable('the change is recorded but the read models have not caught up yet (is a projector running?); read it again shortly');
    }
  };
  await waitFor(RECORDS_PROJECTION, position);
  if (object === undefined) return;
  let at = position;
  for (let level = 0; level < rollupDepthFrom(object); level++) {
    await waitFor(ROLLUPS_REACTOR, at);
    const appended = await readStore.checkpoint(appendedCheckpoint(ROLLUPS_REACTOR));
    if (appended === null || comparePositions(appended, at) <= 0) return;
    at = appended;
    await waitFor(RECORDS_PROJECTION, at);
  }
}

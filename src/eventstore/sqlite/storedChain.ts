import { ChainCheck } from '../chainCheck.js';
import type { ChainReport } from '../port.js';
import { storedRowEvent, type EventLog } from './eventLog.js';

/**
 * The embedded store's chain check (EventStore.checkChain) over the log up to seq `until`, a page
 * of stored rows at a time in log order. Shared by the store's own thread and the chain check's
 * thread (chainThread.ts).
 */

/**
 * Rows per page. Small pages keep a thread's heap small (each row's text and the hashed text
 * built from it live until the page is done) at the same speed (docs/performance-log.md, verify lane 3).
 */
const CHAIN_PAGE = 500;

export async function checkStoredChain(
  log: EventLog,
  until: number,
  afterPage: (events: number) => Promise<void> | void,
): Promise<ChainReport> {
  // One writer holds the file's write lock per commit, so the chain runs along the whole log.
  const check = new ChainCheck('log');
  let count = 0;
  for (let cursor = 0; cursor < until; ) {
    const rows = log.storedAfter(cursor, until, CHAIN_PAGE);
    for (const row of rows) {
      // The text as stored proves an event without parsing it; anything else is checked parsed.
      const [, id, stream, revision, type, created, data, metadata] = row;
      if (!check.addStoredText({ id, stream, revision, type, created, data, metadata })) check.add(storedRowEvent(row));
    }
    count += rows.length;
    if (rows.length < CHAIN_PAGE) break;
    cursor = rows.at(-1)![0];
    await afterPage(count);
  }
  return check.report(count);
}

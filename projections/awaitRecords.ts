import type { Position } from '../src/eventstore/position.js';
import type { ReadStore } from '../src/readstore/port.js';
import { RECORDS_PROJECTION } from '../src/readstore/port.js';

/**
 * Reactors read the records read model only once it shows the event they react to: waits (without
 * bound, as a projection would wait for its events) until the records projection has passed it.
 */
export async function awaitRecords(readStore: ReadStore, position: Position, stopped: () => boolean = () => false): Promise<void> {
  while (!(await readStore.waitForCheckpoint(RECORDS_PROJECTION, position, 5_000))) {
    if (stopped()) throw new Error('stopped while waiting for the records projection');
    // A closed store answers false at once: look again later rather than spin.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs tasks one at a time, in call order (a reactor's reactions and its daily pass take turns). */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

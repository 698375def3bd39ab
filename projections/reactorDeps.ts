import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.js';
import type { ReadStore } from '../src/readstore/port.js';

/** What a reactor (a projection that appends) works with. */
export interface ReactorDeps {
  events: EventStore;
  readStore: ReadStore;
  logger: Logger;
  /** Today's date for date triggers and date-relative inputs; tests move it. */
  clock: () => Date;
}

import type { Logger } from 'pino';
import type { Firing, FiringResult } from '../src/events/firing.js';
import type { EventStore } from '../src/eventstore/port.js';
import type { ReadStore } from '../src/readstore/port.js';

/**
 * What a reactor (a projection that appends) works with. Its appends go through the write side's
 * command code, handed in by the composition root (projections never import commands/).
 */
export interface ReactorDeps {
  events: EventStore;
  readStore: ReadStore;
  fire(firing: Firing): Promise<FiringResult>;
  writeHealthScores(workspaceId: string, scores: [clientId: string, score: number][]): Promise<void>;
  logger: Logger;
  /** Today's date for date triggers and date-relative inputs; tests move it. */
  clock: () => Date;
}

import type { EventStore } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import type { ReadStore } from '../src/readstore/port.js';
import type { User } from '../src/setup/port.js';
import type { AutoNumbers } from './autoNumbers.js';

/** What the write side needs; chosen and wired in src/service.ts. */
export interface CommandDeps {
  events: EventStore;
  readStore: ReadStore;
  autoNumbers: AutoNumbers;
  listUsers(workspaceId: string): Promise<User[]>;
  /**
   * Resolves once the read models show everything up to `position` (read your writes) and, given
   * the object written, the roll-ups that write moved in other records.
   */
  waitVisible(position: Position, object?: string): Promise<void>;
  /** Logs an unexpected failure of one record of an upsert (its client only reads "internal error"). */
  reportInternal?(error: unknown): void;
}

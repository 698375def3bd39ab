import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.js';
import type { ReadStore } from '../src/readstore/port.js';

/** A playbook template firing for a client, and what came of it (written by commands/playbook). */
export interface Firing {
  workspaceId: string;
  templateId: string;
  clientId: string;
  /** The trigger type (playbooks.source). */
  trigger: string;
  /** Deterministic per trigger instance: `<templateId>:<clientId>:<instance>`. */
  triggerKey: string;
  startDate: string;
}

export type FiringResult = { status: 'fired'; playbookId: string; created: boolean } | { status: 'failed'; reason: string };

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

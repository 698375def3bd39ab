import type { Position } from '../eventstore/position.js';

/**
 * A playbook template firing for a client, and what came of it: what the automation reactor
 * (projections/) asks of the write side (commands/playbook), which neither imports from the other.
 */
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

export type FiringResult =
  | { status: 'fired'; playbookId: string; created: boolean; position: Position | null }
  | { status: 'failed'; reason: string };

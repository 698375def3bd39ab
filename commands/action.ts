import { randomUUID } from 'node:crypto';
import type { Actor, EventMetadata, EventSource } from '../src/eventstore/port.js';

/** One action (an API request, a CLI command, an import batch): every event it appends shares its id. */
export interface Action {
  workspaceId: string;
  actor: Actor;
  source: EventSource;
  actionId: string;
  correlationId: string;
}

export function newAction(workspaceId: string, actor: Actor, source: EventSource, correlationId?: string): Action {
  const actionId = randomUUID();
  return { workspaceId, actor, source, actionId, correlationId: correlationId ?? actionId };
}

export function metadataFor(action: Action, actionCounts: Record<string, number>): EventMetadata {
  return {
    source: action.source,
    actor: action.actor,
    actionId: action.actionId,
    correlationId: action.correlationId,
    causationId: action.actionId,
    actionCounts,
  };
}

import { randomUUID } from 'node:crypto';
import { newId } from '../core/ids.js';
import type { Actor, EventStore } from '../eventstore/port.js';
import { workspaceStream } from '../events/workspace.js';

/**
 * Setup changes are events too (ARCHITECTURE.md): each one is appended to `workspace-<id>`, so
 * auditors see who changed a key or a webhook, and when. Never with a key value or a secret.
 */

export const SETUP_EVENT_SCHEMA_VERSION = 1;

export type SetupEventType =
  | 'WorkspaceCreated'
  | 'ApiKeyCreated'
  | 'ApiKeyRevoked'
  | 'ApiKeyRenamed'
  | 'UserAdded'
  | 'WebhookCreated'
  | 'WebhookChanged'
  | 'WebhookSwitchedOn'
  | 'WebhookSwitchedOff'
  | 'WebhookSecretRotated'
  | 'WebhookDeleted'
  | 'WebhookTestSent';

/**
 * Appends one audit event and returns its id. The change itself is already saved when this
 * runs, so a failure says exactly that.
 */
export async function appendAuditEvent(
  events: EventStore,
  actor: Actor,
  workspaceId: string,
  type: SetupEventType,
  data: Record<string, unknown>,
): Promise<string> {
  const id = newId();
  const actionId = randomUUID();
  try {
    await events.append(
      workspaceStream(workspaceId),
      [
        {
          id,
          type,
          data: { schemaVersion: SETUP_EVENT_SCHEMA_VERSION, workspaceId, ...data },
          metadata: { source: 'app', actor, actionId, correlationId: actionId, causationId: actionId },
        },
      ],
      { expectedRevision: 'any' },
    );
    return id;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`the change was saved, but its audit event (${type}) could not be written to the event log: ${reason}`, { cause: error });
  }
}

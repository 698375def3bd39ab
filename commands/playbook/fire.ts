import { NotFound, ValidationFailed } from '../../src/core/errors.js';
import type { Actor, EventStore } from '../../src/eventstore/port.js';
import type { Firing, FiringResult } from '../../src/events/firing.js';
import type { ReadStore } from '../../src/readstore/port.js';
import { newAction } from '../action.js';
import { derivedId } from '../derivedIds.js';
import { buildPlaybook } from './build.js';
import { recordFailedRun, runEntryAppend, type RunEntry } from './runs.js';
import { appendPlaybook, loadTemplate } from './start.js';

/**
 * One firing of a playbook template for a client (source `automation`, actor the template): the
 * playbook, its steps and tasks in one action, and an entry in the workspace's automation runs.
 * A firing that cannot be done (a template without steps, a client gone) is recorded as a failed
 * run and answered as such; it never throws for those, so it never blocks the firings behind it.
 */

export function automationActor(templateId: string, templateName: string | null): Actor {
  return { type: 'system', id: templateId, name: templateName ?? templateId };
}

export function playbookIdFor(workspaceId: string, triggerKey: string): string {
  return derivedId(workspaceId, 'playbook', triggerKey);
}

export async function firePlaybook(deps: { events: EventStore; readStore: ReadStore }, firing: Firing): Promise<FiringResult> {
  const { workspaceId, templateId, clientId } = firing;
  const template = await deps.readStore.get(workspaceId, 'playbookTemplates', templateId);
  const action = newAction(workspaceId, automationActor(templateId, template?.name ?? null), 'automation');
  const client = await deps.readStore.get(workspaceId, 'clients', clientId);
  const entry: RunEntry = {
    status: 'fired',
    trigger: firing.trigger,
    triggerKey: firing.triggerKey,
    template: { id: templateId, name: template?.name ?? null },
    client: { id: clientId, name: client?.name ?? null },
    playbookId: null,
    reason: null,
  };
  try {
    if (!client) throw new NotFound(`the client ${clientId} does not exist (deleted?)`);
    const parts = await loadTemplate(deps.readStore, workspaceId, templateId);
    const owner = typeof client.fields['owner'] === 'string' ? client.fields['owner'] : null;
    const playbookId = playbookIdFor(workspaceId, firing.triggerKey);
    const built = buildPlaybook(parts, {
      playbookId,
      clientId,
      clientOwner: owner,
      owner,
      startDate: firing.startDate,
      source: firing.trigger,
      triggerKey: firing.triggerKey,
    });
    const written = await appendPlaybook(deps.events, action, built, [runEntryAppend(action, { ...entry, playbookId })]);
    return { status: 'fired', playbookId, ...written };
  } catch (error) {
    if (!(error instanceof NotFound) && !(error instanceof ValidationFailed)) throw error;
    await recordFailedRun(deps.events, action, { ...entry, status: 'failed', reason: error.message });
    return { status: 'failed', reason: error.message };
  }
}

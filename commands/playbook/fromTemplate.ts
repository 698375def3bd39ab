import type { ObjectDef } from '../../src/schema/types.js';
import { filterKey } from '../../src/readstore/filterKey.js';
import type { Action } from '../action.js';
import type { CommandDeps } from '../deps.js';
import { upsertRecords, type SaveResult } from '../upsert.js';
import { buildSteps } from './build.js';
import { appendSteps, loadTemplate } from './start.js';

/**
 * POST /api/v1/playbooks with `template` set (issue 26): a saved playbook that names a template
 * and has no steps yet gets the template's steps and tasks, as the app makes them, in the same
 * action as the request (more than 20 tasks: bulk webhook events). Their ids derive from the
 * playbook's, so a retried request adds none twice. A template without steps adds nothing.
 */
export async function upsertPlaybooks(deps: CommandDeps, action: Action, object: ObjectDef, body: unknown, match: string | undefined): Promise<SaveResult> {
  const result = await upsertRecords(deps, action, object, body, match);
  const { workspaceId } = action;
  for (const id of new Set(result.ids)) {
    const playbook = await deps.readStore.get(workspaceId, 'playbooks', id);
    const templateId = playbook?.fields['template'];
    if (!playbook || typeof templateId !== 'string') continue;
    const existing = await deps.readStore.find({ workspaceId, object: 'playbookSteps', filters: [{ field: 'playbook', value: filterKey(id) }], limit: 1, offset: 0 });
    if (existing.total > 0) continue;
    const parts = await loadTemplate(deps.readStore, workspaceId, templateId).catch(() => null);
    const clientId = playbook.fields['client'];
    if (!parts || typeof clientId !== 'string') continue;
    const client = await deps.readStore.get(workspaceId, 'clients', clientId);
    const owner = typeof playbook.fields['owner'] === 'string' ? playbook.fields['owner'] : null;
    const clientOwner = typeof client?.fields['owner'] === 'string' ? client.fields['owner'] : null;
    const startDate = typeof playbook.fields['startDate'] === 'string' ? playbook.fields['startDate'] : playbook.createdAt.slice(0, 10);
    const built = buildSteps(parts, { playbookId: id, clientId, clientOwner, owner, startDate, source: null, triggerKey: null });
    const position = await appendSteps(deps.events, action, built);
    if (position) await deps.waitVisible(position);
  }
  return result;
}

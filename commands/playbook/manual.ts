import { newId } from '../../src/core/ids.js';
import { NotFound, ValidationFailed } from '../../src/core/errors.js';
import { isUuid } from '../../src/core/ids.js';
import { filterKey } from '../../src/schema/filterKey.js';
import type { RecordDocument } from '../../src/readstore/port.js';
import type { CommandDeps } from '../deps.js';
import { firePlaybook } from './fire.js';

/**
 * "Manually" (issue 26): `csr playbooks start` starts a template's playbook for a client, as the
 * app's Start button does. Any template may be started by hand, active or not; each start is a
 * trigger instance of its own. A start that cannot be done is recorded as a failed run and
 * answered with its reason.
 */

async function byIdOrName(deps: CommandDeps, workspaceId: string, object: string, label: string, ref: string): Promise<RecordDocument> {
  if (isUuid(ref)) {
    const found = await deps.readStore.get(workspaceId, object, ref.toLowerCase());
    if (found) return found;
  }
  const named = await deps.readStore.find({ workspaceId, object, filters: [], name: filterKey(ref), limit: 2, offset: 0 });
  if (named.total === 1) return named.documents[0]!;
  if (named.total > 1) throw new ValidationFailed(`ambiguous ${label} "${ref}": ${named.total} records have that name; give its id`);
  throw new NotFound(`no ${label} with id or name "${ref}"`);
}

export interface StartedPlaybook {
  id: string;
  name: string | null;
  template: { id: string; name: string | null };
  client: { id: string; name: string | null };
  triggerKey: string;
}

export async function startPlaybookManually(deps: CommandDeps, workspaceId: string, templateRef: string, clientRef: string, today: string): Promise<StartedPlaybook> {
  const template = await byIdOrName(deps, workspaceId, 'playbookTemplates', 'playbook template', templateRef);
  const client = await byIdOrName(deps, workspaceId, 'clients', 'client', clientRef);
  const triggerKey = `${template.id}:${client.id}:manual:${newId()}`;
  const result = await firePlaybook(deps, { workspaceId, templateId: template.id, clientId: client.id, trigger: 'Manually', triggerKey, startDate: today });
  if (result.status === 'failed') throw new ValidationFailed(result.reason);
  if (result.position) await deps.waitVisible(result.position);
  return {
    id: result.playbookId,
    name: template.name,
    template: { id: template.id, name: template.name },
    client: { id: client.id, name: client.name },
    triggerKey,
  };
}

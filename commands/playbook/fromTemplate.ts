import { Conflict } from '../../src/core/errors.js';
import type { StreamAppend } from '../../src/eventstore/port.js';
import { filterKey } from '../../src/schema/filterKey.js';
import type { ReadStore, Values } from '../../src/readstore/port.js';
import type { ObjectDef } from '../../src/schema/types.js';
import type { Action } from '../action.js';
import type { CommandDeps } from '../deps.js';
import { upsertRecords, type SaveResult } from '../upsert.js';
import { buildSteps } from './build.js';
import { loadTemplate, stepAppends } from './start.js';

/**
 * POST /api/v1/playbooks with `template` set (issue 26): a playbook that names a template and has
 * no steps yet gets the template's steps and tasks, as the app makes them, in the same action as
 * the request (more than 20 tasks: bulk webhook events). Their ids derive from the playbook's, so
 * a retried request adds none twice. A template without steps adds nothing.
 *
 * All or none: a new playbook is written in one group with its steps and tasks (one transaction
 * on the embedded store), so a failure midway leaves no playbook without them. A playbook that
 * exists already (an update naming a template) without steps gets them as one group.
 */
export async function upsertPlaybooks(deps: CommandDeps, action: Action, object: ObjectDef, body: unknown, match: string | undefined): Promise<SaveResult> {
  const withSteps = new Set<string>();
  const withCreate = async (recordId: string, values: Values): Promise<StreamAppend[]> => {
    const appends = await templateAppends(deps.readStore, action, recordId, values, new Date().toISOString().slice(0, 10));
    if (appends.length > 0) withSteps.add(recordId);
    return appends;
  };
  const result = await upsertRecords(deps, action, object, body, match, { withCreate });
  for (const id of new Set(result.ids)) {
    if (!withSteps.has(id)) await completeExisting(deps, action, id);
  }
  return result;
}

/** The steps and tasks of the template a playbook names ([] when it names none, or one without steps). */
async function templateAppends(readStore: ReadStore, action: Action, playbookId: string, values: Values, today: string): Promise<StreamAppend[]> {
  const templateId = values['template'];
  const clientId = values['client'];
  if (typeof templateId !== 'string' || typeof clientId !== 'string') return [];
  const { workspaceId } = action;
  const parts = await loadTemplate(readStore, workspaceId, templateId).catch(() => null);
  if (!parts) return [];
  const client = await readStore.get(workspaceId, 'clients', clientId);
  const owner = typeof values['owner'] === 'string' ? values['owner'] : null;
  const clientOwner = typeof client?.fields['owner'] === 'string' ? client.fields['owner'] : null;
  const startDate = typeof values['startDate'] === 'string' ? values['startDate'] : today;
  return stepAppends(action, buildSteps(parts, { playbookId, clientId, clientOwner, owner, startDate, source: null, triggerKey: null }));
}

/**
 * An existing playbook naming a template and without steps (an update that sets the template):
 * the template's steps and tasks as one group. One with steps keeps them as they are, also after
 * its template changed; a concurrent request adding them first leaves nothing to do.
 */
async function completeExisting(deps: CommandDeps, action: Action, id: string): Promise<void> {
  const { workspaceId } = action;
  const playbook = await deps.readStore.get(workspaceId, 'playbooks', id);
  if (!playbook) return;
  const steps = await deps.readStore.find({ workspaceId, object: 'playbookSteps', filters: [{ field: 'playbook', value: filterKey(id) }], limit: 1, offset: 0 });
  if (steps.total > 0) return;
  const appends = await templateAppends(deps.readStore, action, id, playbook.fields, playbook.createdAt.slice(0, 10));
  if (appends.length === 0) return;
  try {
    const { first } = await deps.events.appendThen(appends, []);
    await deps.waitVisible(first.position);
  } catch (error) {
    if (!(error instanceof Conflict)) throw error;
  }
}

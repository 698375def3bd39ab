import { Conflict, NotFound, ValidationFailed } from '../../src/core/errors.js';
import type { EventStore, StreamAppend } from '../../src/eventstore/port.js';
import type { Position } from '../../src/eventstore/position.js';
import { filterKey } from '../../src/schema/filterKey.js';
import type { ReadStore, RecordDocument } from '../../src/readstore/port.js';
import { metadataFor, type Action } from '../action.js';
import { decide, initialState } from '../record/decider.js';
import { recordAppend } from '../record/repository.js';
import type { BuiltPlaybook, NewRecord, TemplateParts } from './build.js';

/**
 * Writes a playbook made from a template (build.ts) as one action: its records are created with
 * ids derived from the trigger, each appended with "no stream yet", so a second run of the same
 * trigger (a replay after a crash, another process) writes nothing new, and one interrupted
 * between the playbook and its steps completes them.
 */

const PAGE = 1000;

async function all(readStore: ReadStore, workspaceId: string, object: string, field: string, id: string): Promise<RecordDocument[]> {
  const found: RecordDocument[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await readStore.find({ workspaceId, object, filters: [{ field, value: filterKey(id) }], limit: PAGE, offset });
    found.push(...page.documents);
    if (page.documents.length < PAGE) return found;
  }
}

/** The template with its steps and tasks; a template without steps cannot start a playbook. */
export async function loadTemplate(readStore: ReadStore, workspaceId: string, templateId: string): Promise<TemplateParts> {
  const template = await readStore.get(workspaceId, 'playbookTemplates', templateId);
  if (!template) throw new NotFound(`no playbook template with id ${templateId}`);
  const [steps, tasks] = await Promise.all([
    all(readStore, workspaceId, 'templateSteps', 'template', templateId),
    all(readStore, workspaceId, 'templateTasks', 'template', templateId),
  ]);
  if (steps.length === 0) throw new ValidationFailed(`the playbook template "${template.name ?? templateId}" has no steps`);
  return { template, steps, tasks };
}

function createAppend(action: Action, object: string, record: NewRecord, counts: Record<string, number>): StreamAppend {
  const command = { type: 'CreateRecord' as const, workspaceId: action.workspaceId, object, recordId: record.id, fields: record.values };
  return recordAppend(record.id, decide(command, initialState), metadataFor(action, counts), 'no_stream');
}

/**
 * Appends each record that does not exist yet, the steps before the tasks (a task counted in its
 * step's roll-up needs the step first); answers the last position written (null: none).
 */
async function appendMissing(events: EventStore, ...groups: StreamAppend[][]): Promise<Position | null> {
  let last: Position | null = null;
  for (const appends of groups) {
    const outcomes = await Promise.allSettled(appends.map((append) => events.append(append.stream, append.events, { expectedRevision: 'no_stream' })));
    for (const outcome of outcomes) {
      if (outcome.status === 'fulfilled') last = outcome.value.position;
      else if (!(outcome.reason instanceof Conflict)) throw outcome.reason;
    }
  }
  return last;
}

export interface Written {
  /** False when the playbook existed already (this trigger had fired before). */
  created: boolean;
  position: Position | null;
}

/**
 * The playbook first, then its steps and tasks (the embedded store commits them together). When
 * the playbook exists already, only its missing steps and tasks are written.
 */
export async function appendPlaybook(events: EventStore, action: Action, built: BuiltPlaybook, also: StreamAppend[] = []): Promise<Written> {
  const counts = { playbooks: 1, playbookSteps: built.steps.length, tasks: built.tasks.length };
  const steps = built.steps.map((step) => createAppend(action, 'playbookSteps', step, counts));
  const tasks = built.tasks.map((task) => createAppend(action, 'tasks', task, counts));
  try {
    const { first, then } = await events.appendThen(createAppend(action, 'playbooks', built.playbook, counts), [...steps, ...tasks, ...also]);
    let position = first.position;
    // The position of the last record written: `also` (not records) is never projected, so waiting for it would never end.
    then.forEach((outcome, i) => {
      if (outcome.status === 'rejected' && !(outcome.reason instanceof Conflict)) throw outcome.reason;
      if (outcome.status === 'fulfilled' && i < steps.length + tasks.length) position = outcome.value.position;
    });
    return { created: true, position };
  } catch (error) {
    if (!(error instanceof Conflict)) throw error;
    return { created: false, position: await appendMissing(events, steps, tasks) };
  }
}

/**
 * The creates of a template's steps and tasks, the steps before the tasks (a task counted in its
 * step's roll-up needs the step first), each with "no stream yet".
 */
export function stepAppends(action: Action, built: Omit<BuiltPlaybook, 'playbook'>): StreamAppend[] {
  const counts = { playbookSteps: built.steps.length, tasks: built.tasks.length };
  return [...built.steps.map((step) => createAppend(action, 'playbookSteps', step, counts)), ...built.tasks.map((task) => createAppend(action, 'tasks', task, counts))];
}

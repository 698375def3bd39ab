import type { StoredValue, Values } from '../../src/readstore/port.js';
import { addDays } from '../../src/schema/dates.js';
import { derivedId } from '../derivedIds.js';

/**
 * A playbook made from a template, as pure data (PRODUCT.md, issue 26): the playbook, its steps
 * (order, dueDate = start + dueAfterDays) and their tasks (subject, priority, dueDate, assignee
 * from assignTo). Ids derive from the playbook's id, so building twice gives the same records.
 *
 * Decisions where the spec is silent:
 * - steps are ordered by `order`, then as created; a step without `order` comes last;
 * - a task's dueDate is start + its own dueAfterDays, else its step's dueDate, else none;
 * - assignTo: "Playbook owner" (also when empty) is the playbook's owner, "Client's account owner"
 *   the client's owner, "Specific user" the template task's assignee;
 * - tasks start "Not started" and link the client, the playbook and the step.
 */

export interface TemplateRecord {
  id: string;
  fields: Values;
}

export interface TemplateParts {
  template: TemplateRecord;
  steps: TemplateRecord[];
  tasks: TemplateRecord[];
}

export interface NewRecord {
  id: string;
  values: Values;
}

export interface BuiltPlaybook {
  playbook: NewRecord;
  steps: NewRecord[];
  tasks: NewRecord[];
}

export interface PlaybookStart {
  playbookId: string;
  clientId: string;
  clientOwner: string | null;
  /** The playbook's owner: the client's owner unless given. */
  owner: string | null;
  startDate: string;
  /** The trigger type that started it (playbooks.source). */
  source: string | null;
  triggerKey: string | null;
}

const str = (value: StoredValue | undefined): string | null => (typeof value === 'string' && value !== '' ? value : null);
const num = (value: StoredValue | undefined): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

function due(start: string, days: StoredValue | undefined): string | null {
  const n = num(days);
  return n === null ? null : addDays(start, Math.round(n));
}

export function orderedSteps(steps: TemplateRecord[]): TemplateRecord[] {
  return steps
    .map((step, index) => ({ step, index }))
    .sort((a, b) => (num(a.step.fields['order']) ?? Infinity) - (num(b.step.fields['order']) ?? Infinity) || a.index - b.index)
    .map(({ step }) => step);
}

export function assigneeFor(task: Values, playbookOwner: string | null, clientOwner: string | null): string | null {
  switch (task['assignTo']) {
    case "Client's account owner":
      return clientOwner;
    case 'Specific user':
      return str(task['assignee']);
    default:
      return playbookOwner;
  }
}

/** The steps and tasks of `parts` for an existing (or simultaneously created) playbook. */
export function buildSteps(parts: TemplateParts, start: PlaybookStart): Omit<BuiltPlaybook, 'playbook'> {
  const steps: NewRecord[] = [];
  const tasks: NewRecord[] = [];
  orderedSteps(parts.steps).forEach((step, index) => {
    const stepId = derivedId(start.playbookId, 'step', step.id);
    const stepDue = due(start.startDate, step.fields['dueAfterDays']);
    steps.push({
      id: stepId,
      values: {
        name: str(step.fields['name']) ?? `Step ${index + 1}`,
        playbook: start.playbookId,
        order: num(step.fields['order']) ?? index + 1,
        dueDate: stepDue,
        description: str(step.fields['description']),
      },
    });
    for (const task of parts.tasks.filter((candidate) => candidate.fields['step'] === step.id)) {
      tasks.push({
        id: derivedId(start.playbookId, 'task', task.id),
        values: {
          subject: str(task.fields['subject']) ?? 'Task',
          client: start.clientId,
          status: 'Not started',
          priority: str(task.fields['priority']),
          dueDate: due(start.startDate, task.fields['dueAfterDays']) ?? stepDue,
          assignee: assigneeFor(task.fields, start.owner, start.clientOwner),
          description: str(task.fields['description']),
          playbook: start.playbookId,
          step: stepId,
        },
      });
    }
  });
  return { steps, tasks };
}

export function buildPlaybook(parts: TemplateParts, start: PlaybookStart): BuiltPlaybook {
  const playbook: NewRecord = {
    id: start.playbookId,
    values: {
      name: str(parts.template.fields['name']) ?? 'Playbook',
      client: start.clientId,
      owner: start.owner,
      status: 'Not started',
      startDate: start.startDate,
      template: parts.template.id,
      source: start.source,
      triggerKey: start.triggerKey,
    },
  };
  return { playbook, ...buildSteps(parts, start) };
}

import { describe, expect, it } from 'vitest';
import { assigneeFor, buildPlaybook, type TemplateParts } from '../../commands/playbook/build.js';

/** A playbook from a template as data: order, due dates, assignment rules, deterministic ids. */

const parts: TemplateParts = {
  template: { id: 'tpl', fields: { name: 'Onboarding' } },
  steps: [
    { id: 's-late', fields: { name: 'Later', order: 2, dueAfterDays: 10 } },
    { id: 's-none', fields: { name: 'Unordered' } },
    { id: 's-first', fields: { name: 'First', order: 1, dueAfterDays: 3 } },
  ],
  tasks: [
    { id: 't1', fields: { subject: 'Own', step: 's-first', assignTo: 'Playbook owner', dueAfterDays: 1, priority: 'High' } },
    { id: 't2', fields: { subject: 'Client owner', step: 's-first', assignTo: "Client's account owner" } },
    { id: 't3', fields: { subject: 'Specific', step: 's-late', assignTo: 'Specific user', assignee: 'u-bo' } },
    { id: 't4', fields: { subject: 'Default', step: 's-none' } },
  ],
};
const start = { playbookId: 'pb', clientId: 'c', clientOwner: 'u-ana', owner: 'u-cy', startDate: '2026-01-30', source: 'Manually', triggerKey: 'k' };

describe('buildPlaybook', () => {
  const built = buildPlaybook(parts, start);

  it('orders steps by order, unordered last, with due dates from the start', () => {
    expect(built.steps.map((step) => [step.values['name'], step.values['order'], step.values['dueDate']])).toEqual([
      ['First', 1, '2026-02-02'],
      ['Later', 2, '2026-02-09'],
      ['Unordered', 3, null],
    ]);
  });

  it('assigns by assignTo and dates tasks by their own days, else their step', () => {
    const bySubject = Object.fromEntries(built.tasks.map((task) => [task.values['subject'], task.values]));
    expect(bySubject['Own']).toMatchObject({ assignee: 'u-cy', dueDate: '2026-01-31', priority: 'High', status: 'Not started', playbook: 'pb', client: 'c' });
    expect(bySubject['Client owner']).toMatchObject({ assignee: 'u-ana', dueDate: '2026-02-02' });
    expect(bySubject['Specific']).toMatchObject({ assignee: 'u-bo', dueDate: '2026-02-09' });
    expect(bySubject['Default']).toMatchObject({ assignee: 'u-cy', dueDate: null });
    expect(assigneeFor({ assignTo: 'Specific user' }, 'a', 'b')).toBeNull();
  });

  it('derives the same ids every time, different for another playbook', () => {
    const again = buildPlaybook(parts, start);
    expect(again.tasks.map((task) => task.id)).toEqual(built.tasks.map((task) => task.id));
    const other = buildPlaybook(parts, { ...start, playbookId: 'pb2' });
    expect(other.steps[0]!.id).not.toBe(built.steps[0]!.id);
    expect(built.playbook.values).toMatchObject({ name: 'Onboarding', owner: 'u-cy', status: 'Not started', template: 'tpl', source: 'Manually', triggerKey: 'k' });
  });
});

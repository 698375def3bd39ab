import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firePlaybook } from '../../commands/playbook/fire.js';
import { listRuns } from '../../commands/playbook/runs.js';
import { recordStream } from '../../src/events/records.js';
import { csrTool } from '../support/cli.js';
import { saveRecord, startReactorHarness, teamWorkspace, TestClock } from '../support/automation.js';
import type { ApiClient } from '../support/service.js';
import type { WebhookHarness } from '../support/webhookHarness.js';
import { eventually } from '../support/until.js';

/**
 * Playbook rules (issue 26): each trigger type, assignment rules, failed runs, manual starts from
 * `csr` and POST /playbooks with a template, exactly once per trigger instance.
 */

let h: WebhookHarness;
const clock = new TestClock();

beforeAll(async () => {
  h = await startReactorHarness(clock);
});

afterAll(async () => {
  await h?.close();
});

/** A template with two steps (given out of order) and one task per assignment rule. */
async function template(api: ApiClient, fields: Record<string, unknown>, bo: string): Promise<string> {
  const id = await saveRecord(api, 'playbookTemplates', { active: true, ...fields });
  // Posted with ?match=template,name: step and task names repeat across templates.
  const second = await saveRecord(api, 'templateSteps?match=template,name', { name: 'Second', template: id, order: 2, dueAfterDays: 14 });
  const first = await saveRecord(api, 'templateSteps?match=template,name', { name: 'First', template: id, order: 1, dueAfterDays: 7 });
  await saveRecord(api, 'templateTasks?match=template,subject', [
    { subject: 'Kick off', step: first, template: id, dueAfterDays: 2, priority: 'High', assignTo: 'Playbook owner' },
    { subject: 'Call the owner', step: first, template: id, assignTo: "Client's account owner" },
    { subject: 'Review', step: second, template: id, dueAfterDays: 10, assignTo: 'Specific user', assignee: bo },
  ]);
  return id;
}

async function playbooksOf(api: ApiClient, clientId: string, expected: number): Promise<any[]> {
  const list = async (): Promise<any[]> => (await api.get(`/api/v1/playbooks?client=${clientId}`)).body.data;
  await eventually(list, (found) => found.length >= expected, 30_000, `${expected} playbooks`);
  // Nothing more comes later.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const found = await list();
  expect(found).toHaveLength(expected);
  return found;
}

/**
 * The playbook once its taskCount has come to `count`: the count is a roll-up, appended by its own
 * reactor after the tasks, which neither an automation's firing nor `csr playbooks start` waits for.
 */
function counted(api: ApiClient, playbook: { id: string }, count: number): Promise<any> {
  return eventually(async () => (await api.get(`/api/v1/playbooks/${playbook.id}`)).body.data, (current) => current.taskCount === count, 30_000, `taskCount ${count}`);
}

describe('When a client is created', () => {
  it('creates the playbook, its ordered steps and its tasks, assigned by the rules, with source automation', async () => {
    const { ws, api, ana, bo } = await teamWorkspace(h.svc);
    const templateId = await template(api, { name: 'Onboarding', triggerType: 'When a client is created' }, bo);
    await saveRecord(api, 'playbookTemplates', { name: 'Inactive', active: false, triggerType: 'When a client is created' });
    const clientId = await saveRecord(api, 'clients', { name: 'Globex', owner: ana });

    const playbook = await counted(api, (await playbooksOf(api, clientId, 1))[0], 3);
    expect(playbook).toMatchObject({
      name: 'Onboarding',
      client: { id: clientId, name: 'Globex' },
      owner: { id: ana, name: 'Ana Lima' },
      status: 'Not started',
      startDate: clock.today(),
      template: { id: templateId, name: 'Onboarding' },
      source: 'When a client is created',
      triggerKey: `${templateId}:${clientId}:created`,
      taskCount: 3,
    });
    const steps = (await api.get(`/api/v1/playbookSteps?playbook=${playbook.id}`)).body.data;
    expect(steps.map((step: any) => [step.name, step.order, step.dueDate])).toEqual([
      ['First', 1, clock.day(7)],
      ['Second', 2, clock.day(14)],
    ]);
    const tasks = (await api.get(`/api/v1/tasks?playbook=${playbook.id}`)).body.data;
    const bySubject = Object.fromEntries(tasks.map((task: any) => [task.subject, task]));
    expect(bySubject['Kick off']).toMatchObject({ assignee: { id: ana }, dueDate: clock.day(2), priority: 'High', status: 'Not started', step: { id: steps[0].id }, client: { id: clientId } });
    expect(bySubject['Call the owner']).toMatchObject({ assignee: { id: ana }, dueDate: clock.day(7), step: { id: steps[0].id } });
    expect(bySubject['Review']).toMatchObject({ assignee: { id: bo }, dueDate: clock.day(10), step: { id: steps[1].id } });

    const events = await h.svc.service.backends.events.readStream(recordStream(playbook.id));
    expect(events[0]!.metadata).toMatchObject({ source: 'automation', actor: { type: 'system', id: templateId, name: 'Onboarding' } });
    const csr = csrTool(h.svc.dataDir);
    const history = await csr.json<{ via: string }[]>('history', 'playbooks', playbook.id, '--workspace', ws.slug);
    expect(history[0]!.via).toBe('via automation · Onboarding');
    // The client's create carried its first health score; the playbook's tasks (none overdue) leave it.
    const clientHistory = await csr.json<{ via: string; changes: Record<string, { to: unknown }> }[]>('history', 'clients', clientId, '--workspace', ws.slug);
    expect(clientHistory.map((entry) => entry.via)).not.toContain('via health score');
    expect(clientHistory.at(-1)!.changes['healthScore']).toMatchObject({ to: 85 });
  });
});

describe('When a field changes', () => {
  it('fires when the field changes to the value (any case), once per change; an empty value fires on any change', async () => {
    const { api, ana, bo } = await teamWorkspace(h.svc);
    await template(api, { name: 'Rescue', triggerType: 'When a field changes', triggerField: 'health', triggerValue: 'at risk' }, bo);
    await template(api, { name: 'Tier review', triggerType: 'When a field changes', triggerField: 'tier' }, bo);
    const clientId = await saveRecord(api, 'clients', { name: 'Initech', owner: ana, health: 'At Risk' });
    await playbooksOf(api, clientId, 0); // creating is not a change
    await api.patch(`/api/v1/clients/${clientId}`, { notes: 'unrelated' });
    await api.patch(`/api/v1/clients/${clientId}`, { health: 'Healthy' });
    await playbooksOf(api, clientId, 0);
    await api.patch(`/api/v1/clients/${clientId}`, { health: 'At Risk' });
    const [rescue] = await playbooksOf(api, clientId, 1);
    expect(rescue).toMatchObject({ name: 'Rescue', source: 'When a field changes' });
    await api.patch(`/api/v1/clients/${clientId}`, { health: 'Healthy' });
    await api.patch(`/api/v1/clients/${clientId}`, { health: 'At Risk', tier: 'SMB' });
    const all = await playbooksOf(api, clientId, 3);
    expect(all.map((playbook) => playbook.name).sort()).toEqual(['Rescue', 'Rescue', 'Tier review']);
    expect(new Set(all.map((playbook) => playbook.triggerKey)).size).toBe(3);
  });
});

describe('Days before a date', () => {
  it('fires when the date comes within triggerDays, when it is set and on the daily pass, once per date', async () => {
    const { api, ana, bo } = await teamWorkspace(h.svc);
    const templateId = await template(api, { name: 'Renewal prep', triggerType: 'Days before a date', triggerField: 'renewalDate', triggerDays: 30 }, bo);
    const soon = await saveRecord(api, 'clients', { name: 'Soon Co', owner: ana, renewalDate: clock.day(40) });
    const later = await saveRecord(api, 'clients', { name: 'Later Co', owner: ana });
    await playbooksOf(api, soon, 0);
    await api.patch(`/api/v1/clients/${later}`, { renewalDate: clock.day(12) });
    const [laterPlaybook] = await playbooksOf(api, later, 1);
    expect(laterPlaybook.triggerKey).toBe(`${templateId}:${later}:date:renewalDate=${clock.day(12)}`);

    const renewal = clock.day(40);
    clock.advanceDays(10);
    try {
      const [playbook] = await playbooksOf(api, soon, 1);
      expect(playbook).toMatchObject({ name: 'Renewal prep', source: 'Days before a date', startDate: clock.today() });
      expect(playbook.triggerKey).toBe(`${templateId}:${soon}:date:renewalDate=${renewal}`);
      // Another day passes: the same date does not fire again.
      clock.advanceDays(1);
      await playbooksOf(api, soon, 1);
    } finally {
      clock.reset();
    }
  });
});

describe('Manually', () => {
  it('csr playbooks start makes the playbook for a client by name; automation runs lists it', async () => {
    const { ws, api, ana, bo } = await teamWorkspace(h.svc);
    const templateId = await template(api, { name: 'QBR prep', triggerType: 'Manually' }, bo);
    const clientId = await saveRecord(api, 'clients', { name: 'Hooli', owner: ana });
    await playbooksOf(api, clientId, 0);
    const csr = csrTool(h.svc.dataDir);
    const started = await csr.json<{ id: string; triggerKey: string }>('playbooks', 'start', '--workspace', ws.slug, '--template', 'qbr prep', '--client', 'Hooli');
    const playbook = await counted(api, (await playbooksOf(api, clientId, 1))[0], 3);
    expect(playbook).toMatchObject({ id: started.id, source: 'Manually', template: { id: templateId }, taskCount: 3 });
    const runs = await csr.json<any[]>('automation', 'runs', '--workspace', ws.slug);
    expect(runs[0]).toMatchObject({ status: 'fired', trigger: 'Manually', playbookId: started.id, client: { id: clientId, name: 'Hooli' } });
    const missing = await csr.fails(1, 'playbooks', 'start', '--workspace', ws.slug, '--template', 'QBR prep', '--client', 'Nobody');
    expect(missing).toContain('no client with id or name "Nobody"');
  });

  it('POST /playbooks with a template creates its steps and tasks; the rules use the playbook owner', async () => {
    const { api, ana, bo } = await teamWorkspace(h.svc);
    const templateId = await template(api, { name: 'Expansion', triggerType: 'Manually' }, bo);
    const clientId = await saveRecord(api, 'clients', { name: 'Umbrella', owner: ana });
    const saved = await api.post('/api/v1/playbooks', { name: 'Expansion for Umbrella', client: clientId, owner: 'Bo Chen', status: 'In progress', startDate: '2030-01-01', template: 'Expansion' });
    expect(saved.status).toBe(201);
    const playbookId = saved.body.ids[0];
    // Visible when the POST answers.
    const tasks = (await api.get(`/api/v1/tasks?playbook=${playbookId}`)).body.data;
    const bySubject = Object.fromEntries(tasks.map((task: any) => [task.subject, task]));
    expect(bySubject['Kick off']).toMatchObject({ assignee: { id: bo }, dueDate: '2030-01-03' });
    expect(bySubject['Call the owner']).toMatchObject({ assignee: { id: ana } });
    expect(bySubject['Review']).toMatchObject({ assignee: { id: bo } });
    expect((await api.get(`/api/v1/playbookSteps?playbook=${playbookId}`)).body.total).toBe(2);
    expect((await api.get(`/api/v1/playbooks/${playbookId}`)).body.data.template).toEqual({ id: templateId, name: 'Expansion' });
    // Saving it again adds nothing.
    await api.post('/api/v1/playbooks', { id: playbookId, status: 'On hold', template: templateId });
    expect((await api.get(`/api/v1/tasks?playbook=${playbookId}`)).body.total).toBe(3);
  });

  it('POST /playbooks with a template is all or none: a failure writing its last task leaves no playbook, step or task, and the retry makes them once', async () => {
    const { ws, api, ana, bo } = await teamWorkspace(h.svc);
    await template(api, { name: 'Atomic', triggerType: 'Manually' }, bo);
    const clientId = await saveRecord(api, 'clients', { name: 'Atomic Co', owner: ana });
    const body = { name: 'Atomic for Atomic Co', client: clientId, owner: 'Bo Chen', status: 'Not started', startDate: '2030-01-01', template: 'Atomic' };
    const store = h.svc.service.backends.events as any;
    const appendThen = store.appendThen;
    let injected = 0;
    // A real failure inside the store, after the playbook and its steps are written in the same group:
    // the last task's data cannot be stored (a BigInt is no JSON).
    store.appendThen = (first: any, then: any) => {
      const group = Array.isArray(first) ? first : [first];
      const lastTask = group.findLast((append: any) => append.events[0]?.data?.object === 'tasks');
      if (lastTask && group.some((append: any) => append.events[0]?.data?.object === 'playbooks')) {
        injected++;
        const [event] = lastTask.events;
        lastTask.events = [{ ...event, data: { ...event.data, fields: { ...event.data.fields, broken: 1n } } }];
      }
      return appendThen.call(store, first, then);
    };
    let failed;
    try {
      failed = await api.post('/api/v1/playbooks', body);
    } finally {
      store.appendThen = appendThen;
    }
    expect(injected).toBeGreaterThan(0);
    expect(failed.status).toBe(422);
    expect(failed.body.ids).toEqual([]);
    const written = await h.svc.service.backends.events.readAll({ from: 'start', maxCount: 100_000 });
    expect(written.filter((event) => event.data['workspaceId'] === ws.id && ['playbooks', 'playbookSteps', 'tasks'].includes(String(event.data['object'])))).toEqual([]);
    expect((await api.get(`/api/v1/playbooks?client=${clientId}`)).body.total).toBe(0);
    expect((await api.get(`/api/v1/tasks?client=${clientId}`)).body.total).toBe(0);

    // The same request again, now with an Idempotency-Key: one playbook with its 2 steps and 3 tasks, and a replay of it adds nothing.
    const headers = { 'Idempotency-Key': `atomic-${ws.id}` };
    const saved = await api.post('/api/v1/playbooks', body, headers);
    expect(saved.status).toBe(201);
    const replay = await api.post('/api/v1/playbooks', body, headers);
    expect(replay.body).toEqual(saved.body);
    const playbookId = saved.body.ids[0];
    expect((await api.get(`/api/v1/playbookSteps?playbook=${playbookId}`)).body.total).toBe(2);
    expect((await api.get(`/api/v1/tasks?client=${clientId}`)).body.total).toBe(3);
    // Saved again without the key (matched by name, an update): still 3 tasks.
    expect((await api.post('/api/v1/playbooks', body)).status).toBe(200);
    expect((await api.get(`/api/v1/tasks?client=${clientId}`)).body.total).toBe(3);
    expect((await api.get(`/api/v1/playbooks?client=${clientId}`)).body.total).toBe(1);
  });

  it('more than 20 tasks of one firing are one action: bulk webhook events', async () => {
    const { ws, api, ana } = await teamWorkspace(h.svc);
    const templateId = await saveRecord(api, 'playbookTemplates', { name: 'Big', active: true, triggerType: 'When a client is created' });
    const step = await saveRecord(api, 'templateSteps', { name: 'All', template: templateId });
    await saveRecord(api, 'templateTasks', Array.from({ length: 21 }, (_, i) => ({ subject: `Task ${i}`, step, template: templateId })));
    await h.svc.webhooks.create(ws.slug, { name: 'bulk', url: `${h.receiver.origin}/automation-bulk`, objects: ['tasks'] });
    const clientId = await saveRecord(api, 'clients', { name: 'Bulk Co', owner: ana });
    await playbooksOf(api, clientId, 1);
    const [bulk] = await h.receiver.waitFor('/automation-bulk', (all) => all.length >= 1);
    expect(bulk!.body).toMatchObject({ event: 'tasks.created.bulk', source: 'automation', data: { count: 21 } });
  });
});

describe('failed runs and exactly once', () => {
  it('a template without steps is a failed run with its reason, and the templates behind it still fire', async () => {
    const { ws, api, ana, bo } = await teamWorkspace(h.svc);
    await saveRecord(api, 'playbookTemplates', { name: 'Empty', active: true, triggerType: 'When a client is created' });
    await template(api, { name: 'Welcome', triggerType: 'When a client is created' }, bo);
    const clientId = await saveRecord(api, 'clients', { name: 'Failing Co', owner: ana });
    const [playbook] = await playbooksOf(api, clientId, 1);
    expect(playbook.name).toBe('Welcome');
    const runs = await csrTool(h.svc.dataDir).json<any[]>('automation', 'runs', '--workspace', ws.slug);
    const failed = runs.filter((run) => run.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ template: { name: 'Empty' }, client: { id: clientId }, reason: 'the playbook template "Empty" has no steps' });
  });

  it('a deleted client is a failed run, recorded once however often the trigger is replayed', async () => {
    const { ws, api, ana, bo } = await teamWorkspace(h.svc);
    const templateId = await template(api, { name: 'Late', triggerType: 'Manually' }, bo);
    const clientId = await saveRecord(api, 'clients', { name: 'Gone Co', owner: ana });
    expect((await api.delete(`/api/v1/clients/${clientId}`)).status).toBe(200);
    const deps = h.svc.service.backends;
    const firing = { workspaceId: ws.id, templateId, clientId, trigger: 'Manually', triggerKey: `${templateId}:${clientId}:test`, startDate: clock.today() };
    const outcomes = await Promise.all([firePlaybook(deps, firing), firePlaybook(deps, firing)]);
    expect(outcomes.every((outcome) => outcome.status === 'failed')).toBe(true);
    const runs = await listRuns(deps.events, ws.id);
    expect(runs.filter((run) => run.status === 'failed')).toHaveLength(1);
    expect(runs[0]!.reason).toContain('does not exist');
  });

  it('the same trigger instance fired twice at once makes one playbook with its steps and tasks once', async () => {
    const { ws, api, ana, bo } = await teamWorkspace(h.svc);
    const templateId = await template(api, { name: 'Twice', triggerType: 'Manually' }, bo);
    const clientId = await saveRecord(api, 'clients', { name: 'Twice Co', owner: ana });
    const deps = h.svc.service.backends;
    const firing = { workspaceId: ws.id, templateId, clientId, trigger: 'Manually', triggerKey: `${templateId}:${clientId}:once`, startDate: clock.today() };
    const outcomes = await Promise.all([firePlaybook(deps, firing), firePlaybook(deps, firing), firePlaybook(deps, firing)]);
    expect(outcomes.filter((outcome) => outcome.status === 'fired' && outcome.created)).toHaveLength(1);
    const [playbook] = await playbooksOf(api, clientId, 1);
    expect((await api.get(`/api/v1/tasks?playbook=${playbook.id}`)).body.total).toBe(3);
    expect((await listRuns(deps.events, ws.id)).filter((run) => run.status === 'fired')).toHaveLength(1);
  });
});

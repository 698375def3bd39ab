import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type ApiClient, type TestService } from '../support/service.js';

/** PRODUCT.md section 3: calculated values through the API, roll-ups maintained by the projection. */

let svc: TestService;
let api: ApiClient;
beforeAll(async () => {
  svc = await startTestService();
  api = await svc.workspaceClient();
});
afterAll(() => svc.stop());

describe('billing roll-ups', () => {
  it('invoice lines roll up into the invoice, sent invoices into the client open balance', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Billed Co' })).body.ids[0];
    const invoice = (
      await api.post('/api/v1/billing', { client: clientId, status: 'Sent', discount: 10, taxRate: 12.5, amountPaid: 50, issueDate: '2024-01-01', paymentTerms: 'Net 30' })
    ).body.ids[0];
    const lines = await api.post('/api/v1/invoiceLines', [
      { invoice, description: 'Seats', quantity: 3, unitPrice: 33.33 },
      { invoice, description: 'Setup', quantity: 1, unitPrice: 100 },
    ]);
    expect(lines.status).toBe(201);
    expect((await api.record('invoiceLines', lines.body.ids[0])).amount).toBe(99.99);

    const bill = await api.record('billing', invoice);
    expect(bill.subtotal).toBe(199.99);
    expect(bill.taxAmount).toBe(23.75); // (199.99 - 10) * 12.5% = 23.74875
    expect(bill.total).toBe(213.74);
    expect(bill.balanceDue).toBe(163.74);
    expect(bill.dueDate).toBe('2024-01-31');
    expect(bill.paymentStatus).toBe('Overdue');
    expect(bill.daysOverdue).toBeGreaterThan(0);
    expect((await api.record('clients', clientId)).openBalance).toBe(163.74);

    await api.patch(`/api/v1/billing/${invoice}`, { amountPaid: 213.74 });
    expect((await api.record('billing', invoice)).paymentStatus).toBe('Paid');
    expect((await api.record('clients', clientId)).openBalance).toBe(0);

    await api.delete(`/api/v1/invoiceLines/${lines.body.ids[1]}`);
    expect((await api.record('billing', invoice)).subtotal).toBe(99.99);
  });

  it('moving an invoice line to another invoice updates both', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Mover' })).body.ids[0];
    const [a, b] = (await api.post('/api/v1/billing', [{ client: clientId, status: 'Draft' }, { client: clientId, status: 'Draft' }])).body.ids;
    const line = (await api.post('/api/v1/invoiceLines', { invoice: a, description: 'L', quantity: 2, unitPrice: 5 })).body.ids[0];
    expect((await api.record('billing', a)).subtotal).toBe(10);
    await api.patch(`/api/v1/invoiceLines/${line}`, { invoice: b });
    expect((await api.record('billing', a)).subtotal).toBe(0);
    expect((await api.record('billing', b)).subtotal).toBe(10);
    expect((await api.record('billing', b)).paymentStatus).toBe('Not sent');
  });
});

describe('other calculated values', () => {
  it('contacts show the linked client health', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Healthy Co', health: 'Healthy' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'H', client: clientId })).body.ids[0];
    expect((await api.record('contacts', contact)).clientHealth).toBe('Healthy');
    await api.patch(`/api/v1/clients/${clientId}`, { health: 'At Risk' });
    expect((await api.record('contacts', contact)).clientHealth).toBe('At Risk');
  });

  it('playbooks and steps count their tasks; templates count steps and tasks', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Playbook Co' })).body.ids[0];
    const playbook = (await api.post('/api/v1/playbooks', { name: 'P', client: clientId, status: 'In progress' })).body.ids[0];
    const step = (await api.post('/api/v1/playbookSteps', { name: 'S', playbook })).body.ids[0];
    const tasks = await api.post('/api/v1/tasks', [
      { subject: 'T1', status: 'Done', playbook, step },
      { subject: 'T2', status: 'Not started', playbook, step },
      { subject: 'T3', status: 'Done', playbook },
    ]);
    expect(tasks.status).toBe(201);
    expect(await api.record('playbooks', playbook)).toMatchObject({ taskCount: 3, doneCount: 2, progress: 67 });
    expect(await api.record('playbookSteps', step)).toMatchObject({ taskCount: 2, doneCount: 1, progress: 50 });
    expect(await api.record('tasks', tasks.body.ids[0])).toMatchObject({ isDone: 1, dueStatus: 'Done' });
    expect(await api.record('tasks', tasks.body.ids[1])).toMatchObject({ isDone: 0, dueStatus: 'No due date' });

    const template = (await api.post('/api/v1/playbookTemplates', { name: 'Tpl', triggerType: 'Manually' })).body.ids[0];
    const templateStep = (await api.post('/api/v1/templateSteps', { name: 'TS', template })).body.ids[0];
    await api.post('/api/v1/templateTasks', [{ subject: 'a', step: templateStep, template }, { subject: 'b', step: templateStep, template }]);
    expect(await api.record('playbookTemplates', template)).toMatchObject({ stepCount: 1, taskCount: 2 });
  });

  it('renewals, opportunities, surveys and goals', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Forecast Co' })).body.ids[0];
    const renewal = (await api.post('/api/v1/renewals', { name: 'R', client: clientId, renewalDate: '2030-01-01', stage: 'Negotiation', currentArr: 1000, proposedArr: 1200 })).body.ids[0];
    expect(await api.record('renewals', renewal)).toMatchObject({ probability: 75, forecast: 900, change: 200 });
    const opportunity = (await api.post('/api/v1/opportunities', { name: 'O', client: clientId, stage: 'Qualified', amount: 1000 })).body.ids[0];
    expect(await api.record('opportunities', opportunity)).toMatchObject({ probability: 30, forecast: 300 });
    const survey = (await api.post('/api/v1/surveys', { type: 'NPS', score: 8, date: '2024-01-01' })).body.ids[0];
    expect((await api.record('surveys', survey)).category).toBe('Passive');
    expect((await api.post('/api/v1/surveys', { type: 'CSAT', score: 6, date: '2024-01-01' })).status).toBe(422);
    expect((await api.patch(`/api/v1/surveys/${survey}`, { type: 'CSAT' })).status).toBe(422);
    const goal = (await api.post('/api/v1/goals', { name: 'G', client: clientId, status: 'On track', baseline: 10, target: 20, current: 15 })).body.ids[0];
    expect((await api.record('goals', goal)).progress).toBe(50);
  });

  it('calculated values cannot be written', async () => {
    const response = await api.post('/api/v1/goals', { name: 'G', client: 'Forecast Co', status: 'On track', progress: 10 });
    expect(response.status).toBe(422);
    expect(response.body.errors[0].message).toMatch(/progress/);
  });
});

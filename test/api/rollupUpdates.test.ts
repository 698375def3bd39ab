import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORD_STREAM_PREFIX } from '../../src/events/records.js';
import { startTestService, type ApiClient, type TestService } from '../support/service.js';

/**
 * Issue 22 item 11 (PRODUCT.md "Roll-ups"): a change of a stored roll-up value is a change of its
 * record: its updatedAt moves (so `updated_since` finds it), the log holds it on the record's own
 * stream with the source of the change that caused it, and the write that caused it answers only
 * once the roll-up shows, down the cascade.
 */

let svc: TestService;
let api: ApiClient;
beforeAll(async () => {
  svc = await startTestService();
  api = await svc.workspaceClient();
});
afterAll(() => svc.stop());

describe('roll-up changes', () => {
  it('move the invoice and the client updatedAt, visible to updated_since, right in the answer to the line write', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Synced Co' })).body.ids[0];
    const invoice = (await api.post('/api/v1/billing', { client: clientId, status: 'Sent' })).body.ids[0];
    const before = await api.record('billing', invoice);
    const clientBefore = await api.record('clients', clientId);
    await new Promise((resolve) => setTimeout(resolve, 5));

    const line = await api.post('/api/v1/invoiceLines', { invoice, description: 'Seats', quantity: 2, unitPrice: 50 });
    expect(line.status).toBe(201);

    const after = await api.record('billing', invoice);
    expect(after.subtotal).toBe(100);
    expect(after.total).toBe(100);
    expect(Date.parse(after.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
    const clientAfter = await api.record('clients', clientId);
    expect(clientAfter.openBalance).toBe(100);
    expect(Date.parse(clientAfter.updatedAt)).toBeGreaterThan(Date.parse(clientBefore.updatedAt));

    const since = await api.get(`/api/v1/billing?updated_since=${encodeURIComponent(before.updatedAt)}`);
    expect(since.body.data.map((record: any) => record.id)).toContain(invoice);

    // On the invoice's own stream, with the source of the line's write.
    const logged = await svc.service.backends.events.readStream(`${RECORD_STREAM_PREFIX}${invoice}`);
    const last = logged.at(-1)!;
    expect(last.type).toBe('RecordRollupsChanged');
    expect(last.data).toMatchObject({ workspaceId: expect.any(String), object: 'billing', recordId: invoice, rollups: { subtotal: 100 } });
    expect(last.metadata.source).toBe('api');
    expect(last.created.toISOString()).toBe(after.updatedAt);
  });

  it('moves nothing when the roll-up values stay the same', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Still Co' })).body.ids[0];
    const invoice = (await api.post('/api/v1/billing', { client: clientId, status: 'Draft' })).body.ids[0];
    const line = (await api.post('/api/v1/invoiceLines', { invoice, description: 'Seats', quantity: 1, unitPrice: 10 })).body.ids[0];
    const before = await api.record('billing', invoice);
    await api.patch(`/api/v1/invoiceLines/${line}`, { description: 'Seats (renamed)' });
    expect((await api.record('billing', invoice)).updatedAt).toBe(before.updatedAt);
  });

  it('move playbook counts and progress with their tasks', async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Playbook Co' })).body.ids[0];
    const playbook = (await api.post('/api/v1/playbooks', { name: 'Onboarding', client: clientId, status: 'In progress' })).body.ids[0];
    const before = await api.record('playbooks', playbook);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const task = await api.post('/api/v1/tasks', { subject: 'Kick-off', playbook, status: 'Done' });
    expect(task.status, JSON.stringify(task.body)).toBe(201);
    const after = await api.record('playbooks', playbook);
    expect(after.taskCount).toBe(1);
    expect(after.progress).toBe(100);
    expect(Date.parse(after.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
  });
});

describe('looked-up values', () => {
  it("move a contact's updatedAt when its client's health changes", async () => {
    const clientId = (await api.post('/api/v1/clients', { name: 'Healthy Co', health: 'Healthy' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Ana', lastName: 'Lima', client: clientId })).body.ids[0];
    const before = await api.record('contacts', contact);
    expect(before.clientHealth).toBe('Healthy');
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await api.patch(`/api/v1/clients/${clientId}`, { health: 'At Risk' })).status).toBe(200);
    const after = await api.record('contacts', contact);
    expect(after.clientHealth).toBe('At Risk');
    expect(Date.parse(after.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
  });
});

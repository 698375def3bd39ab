import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';

/**
 * Issue 22 item 11: a roll-up change is sent as `<object>.updated` of the record whose roll-up
 * moved, with the calculated values in its data and the source of the change that caused it.
 */

let h: WebhookHarness;
beforeAll(async () => {
  h = await startWebhookHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('roll-up webhooks', () => {
  it('sends billing.updated and clients.updated when an invoice line moves their totals', async () => {
    await h.hook('/rollups', { events: ['updated'], objects: ['billing', 'clients'] });
    const clientId = (await h.api.post('/api/v1/clients', { name: 'Hooked Co' })).body.ids[0];
    const invoice = (await h.api.post('/api/v1/billing', { client: clientId, status: 'Sent' })).body.ids[0];
    expect((await h.api.post('/api/v1/invoiceLines', { invoice, description: 'Seats', quantity: 3, unitPrice: 10 })).status).toBe(201);

    const requests = await h.receiver.waitFor('/rollups', (received) => received.length >= 2);
    const bill = requests.find((request) => request.body.event === 'billing.updated')!;
    expect(bill.body).toMatchObject({ object: 'billing', source: 'api', data: { id: invoice, subtotal: 30, total: 30, balanceDue: 30 } });
    const logged = (await h.svc.service.backends.events.readStream(recordStream(invoice))).at(-1)!;
    expect(bill.body.id).toBe(logged.id);
    expect(bill.body.occurredAt).toBe(logged.created.toISOString());
    const client = requests.find((request) => request.body.event === 'clients.updated')!;
    expect(client.body).toMatchObject({ object: 'clients', source: 'api', data: { id: clientId, openBalance: 30 } });
  });
});

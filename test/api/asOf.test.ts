import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/** ?as_of= on GET one and GET list (issue 23): what GET answered at that moment, roll-ups included. */

const pause = () => new Promise((resolve) => setTimeout(resolve, 15));
const moment = async () => {
  await pause();
  const at = new Date().toISOString();
  await pause();
  return at;
};

/**
 * The service's clock, real time unless pinned: a snapshot is taken with the clock pinned at its
 * moment, so that GET computes its date-dependent values (days overdue, days to renewal) for the
 * same day as `?as_of=` that moment does, also when midnight UTC falls between the two.
 */
let pinned: Date | null = null;
const clock = () => pinned ?? new Date();

let svc: TestService;
let ws: TestWorkspace;
let api: ReturnType<typeof client>;
let acme: string;
let invoice: string;
let line1: string;
const at: string[] = [];
const snapshots: { billing: unknown; client: unknown; lines: unknown }[] = [];

/** What GET answers at a moment after the writes so far (and before the next ones). */
async function snapshot(): Promise<void> {
  const then = await moment();
  pinned = new Date(then);
  try {
    snapshots.push({
      billing: (await api.get(`/api/v1/billing/${invoice}`)).body,
      client: (await api.get(`/api/v1/clients/${acme}`)).body,
      lines: (await api.get(`/api/v1/invoiceLines?invoice=${invoice}`)).body,
    });
  } finally {
    pinned = null;
  }
  at.push(then);
}

beforeAll(async () => {
  svc = await startTestService({}, { clock });
  ws = await svc.workspace();
  api = client(svc, (await ws.key()).key);
  at.push(await moment()); // 0: before anything
  snapshots.push({ billing: null, client: null, lines: null });
  acme = (await api.post('/api/v1/clients', { name: 'Acme', renewalDate: '2030-01-01' })).body.ids[0];
  invoice = (await api.post('/api/v1/billing', { client: acme, status: 'Sent', issueDate: '2024-01-01', paymentTerms: 'Net 30' })).body.ids[0];
  line1 = (await api.post('/api/v1/invoiceLines', { invoice, description: 'Seats', quantity: 2, unitPrice: 100 })).body.ids[0];
  await snapshot(); // 1
  await api.patch(`/api/v1/invoiceLines/${line1}`, { quantity: 3 });
  await api.post('/api/v1/invoiceLines', { invoice, description: 'Support', quantity: 1, unitPrice: 50 });
  await api.patch(`/api/v1/clients/${acme}`, { name: 'Acme Corp' });
  await snapshot(); // 2
  await api.delete(`/api/v1/invoiceLines/${line1}`);
  await api.patch(`/api/v1/billing/${invoice}`, { amountPaid: 20 });
  await snapshot(); // 3
  await api.delete(`/api/v1/billing/${invoice}`);
  await snapshot(); // 4: the invoice is gone
});
afterAll(() => svc.stop());

describe('GET one as of a moment', () => {
  it('answers exactly what GET answered then, roll-ups from the invoice lines as they were included', async () => {
    for (const i of [1, 2, 3]) {
      const then = snapshots[i]!;
      expect((await api.get(`/api/v1/billing/${invoice}?as_of=${at[i]}`)).body, `billing at ${i}`).toEqual(then.billing);
      expect((await api.get(`/api/v1/clients/${acme}?as_of=${at[i]}`)).body, `client at ${i}`).toEqual(then.client);
    }
    // The linked client is named as it was then (renamed between moments 1 and 2).
    expect((snapshots[1]!.billing as any).data.client).toEqual({ id: acme, name: 'Acme' });
    expect((snapshots[2]!.billing as any).data).toMatchObject({ subtotal: 350, total: 350, client: { id: acme, name: 'Acme Corp' } });
    expect((snapshots[3]!.billing as any).data).toMatchObject({ subtotal: 50, balanceDue: 30 });
    expect((snapshots[1]!.client as any).data.openBalance).toBe(200);
  });

  it('answers 404 before the record existed and after it was deleted; the client stays, with no open balance', async () => {
    const before = await api.get(`/api/v1/billing/${invoice}?as_of=${at[0]}`);
    expect(before.status).toBe(404);
    // A record that exists now says so, and since when (issue 39 item 10): not a bare "not found".
    const created = (snapshots[1]!.billing as { data: { createdAt: string } }).data.createdAt;
    expect(before.body.error.message).toBe(`billing record ${invoice} did not exist at ${new Date(at[0]!).toISOString()}: it was created at ${created}`);
    expect((await api.get(`/api/v1/billing/${invoice}?as_of=${at[4]}`)).status).toBe(404);
    expect((await api.get(`/api/v1/invoiceLines/${line1}?as_of=${at[3]}`)).status).toBe(404);
    expect((await api.get(`/api/v1/clients/${acme}?as_of=${at[4]}`)).body).toEqual(snapshots[4]!.client);
    expect((snapshots[4]!.client as any).data.openBalance).toBe(0);
  });

  it('refuses a malformed or future as_of with 422 naming it, and hides other workspaces with 404', async () => {
    for (const value of ['yesterday', '2024-01-01', '2024-13-01T00:00:00Z', new Date(Date.now() + 60_000).toISOString()]) {
      const answer = await api.get(`/api/v1/clients/${acme}?as_of=${encodeURIComponent(value)}`);
      expect(answer.status, value).toBe(422);
      expect(answer.body.error.message).toContain('as_of');
    }
    expect((await api.get(`/api/v1/clients?as_of=soon`)).status).toBe(422);
    const stranger = await svc.workspaceClient();
    const hidden = await stranger.get(`/api/v1/clients/${acme}?as_of=${at[0]}`);
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.message).toBe(`clients record ${acme} not found`);
  });

  it('masks links as GET does for a key without access to the linked object', async () => {
    const restricted = client(svc, (await ws.key({ objects: ['billing'], readOnly: true })).key);
    expect((await restricted.get(`/api/v1/billing/${invoice}?as_of=${at[2]}`)).body.data.client).toEqual({ id: acme });
  });
});

describe('GET list as of a moment', () => {
  it('answers the list GET answered then, with the same filters and paging', async () => {
    for (const i of [1, 2, 3, 4]) {
      expect((await api.get(`/api/v1/invoiceLines?invoice=${invoice}&as_of=${at[i]}`)).body, `lines at ${i}`).toEqual(snapshots[i]!.lines);
    }
    const paged = await api.get(`/api/v1/invoiceLines?invoice=${invoice}&as_of=${at[2]}&limit=1&offset=1`);
    expect(paged.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(paged.body.data[0].description).toBe('Support');
    expect((await api.get(`/api/v1/clients?as_of=${at[0]}`)).body).toEqual({ data: [], total: 0, limit: 100, offset: 0 });
    expect((await api.get(`/api/v1/clients?name=acme&as_of=${at[1]}`)).body.total).toBe(1);
    expect((await api.get(`/api/v1/clients?name=acme&as_of=${at[2]}`)).body.total).toBe(0);
  });
});

describe('date-dependent values', () => {
  it('use the date of as_of, not the date of the request', async () => {
    const day = 86_400_000;
    // Ten days ahead of as_of exactly (not of the moment of each request): a midnight UTC between
    // as_of and the request must not make it eleven.
    let laterNow: number | null = null;
    const later = await startTestService({}, { clock: () => new Date(laterNow ?? Date.now() + 10 * day) });
    try {
      const w = await later.workspace();
      const laterApi = client(later, (await w.key()).key);
      const id = (await laterApi.post('/api/v1/renewals', { name: 'R', client: (await laterApi.post('/api/v1/clients', { name: 'C' })).body.ids[0], renewalDate: '2030-01-01', stage: 'Upcoming' })).body.ids[0];
      const asOf = await moment();
      laterNow = Date.parse(asOf) + 10 * day;
      const now = (await laterApi.get(`/api/v1/renewals/${id}`)).body.data.daysToRenewal;
      const then = (await laterApi.get(`/api/v1/renewals/${id}?as_of=${asOf}`)).body.data.daysToRenewal;
      expect(then - now).toBe(10);
    } finally {
      await later.stop();
    }
  });
});

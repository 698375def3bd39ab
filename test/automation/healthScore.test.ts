import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import { saveRecord, startReactorHarness, TestClock } from '../support/automation.js';
import type { WebhookHarness } from '../support/webhookHarness.js';
import { eventually } from '../support/until.js';

/**
 * The client health score (PRODUCT.md "Health score", issue 26): recomputed by a reactor when an
 * input changes and once a day, appended with source `health score`, never sent to webhooks on
 * its own, read only through the API. A fresh client scores 85: no meeting or conversation in
 * the last 60 days costs 15.
 */

let h: WebhookHarness;
const clock = new TestClock();

beforeAll(async () => {
  h = await startReactorHarness(clock);
});

afterAll(async () => {
  await h?.close();
});

async function newClient(name: string): Promise<string> {
  const saved = await h.api.post('/api/v1/clients', { name });
  expect(saved.status).toBe(201);
  return saved.body.ids[0];
}

async function scoreOf(id: string): Promise<number | null> {
  return (await h.api.get(`/api/v1/clients/${id}`)).body.data.healthScore;
}

async function scoreBecomes(id: string, expected: number): Promise<void> {
  await eventually(() => scoreOf(id), (score) => score === expected, 30_000, `healthScore ${expected}`);
}


describe('health score', () => {
  it('a new client scores 85 (no engagement); a recent conversation makes it 100', async () => {
    const client = await newClient('Fresh Co');
    await scoreBecomes(client, 85);
    await saveRecord(h.api, 'conversations', { subject: 'Hello', client, date: `${clock.today()}T10:00:00Z`, channel: 'Email' });
    await scoreBecomes(client, 100);
  });

  it('a Completed meeting of the last 60 days counts as engagement; a Scheduled one does not', async () => {
    const client = await newClient('Meeting Co');
    const meeting = await saveRecord(h.api, 'meetings', { title: 'QBR', client, start: `${clock.day(-10)}T10:00:00Z`, status: 'Scheduled' });
    await scoreBecomes(client, 85);
    await h.api.patch(`/api/v1/meetings/${meeting}`, { status: 'Completed' });
    await scoreBecomes(client, 100);
    await h.api.patch(`/api/v1/meetings/${meeting}`, { start: `${clock.day(-61)}T10:00:00Z` });
    await scoreBecomes(client, 85);
  });

  it('billing: 10 for an overdue invoice, 25 once it is more than 30 days overdue, 0 once paid', async () => {
    const client = await newClient('Billing Co');
    await scoreBecomes(client, 85);
    const invoice = await saveRecord(h.api, 'billing', { client, status: 'Sent', issueDate: clock.day(-10), paymentTerms: 'Due on receipt' });
    await saveRecord(h.api, 'invoiceLines', { invoice, description: 'Licence', quantity: 1, unitPrice: 100 });
    await scoreBecomes(client, 75);
    await h.api.patch(`/api/v1/billing/${invoice}`, { issueDate: clock.day(-31) });
    await scoreBecomes(client, 60);
    await h.api.patch(`/api/v1/billing/${invoice}`, { amountPaid: 100 });
    await scoreBecomes(client, 85);
  });

  it('sentiment: the latest survey of the last 180 days, linked directly or through a contact', async () => {
    const client = await newClient('Survey Co');
    await scoreBecomes(client, 85);
    const contact = await saveRecord(h.api, 'contacts', { firstName: 'Sam', lastName: 'Survey', client });
    await saveRecord(h.api, 'surveys', { type: 'NPS', score: 3, date: clock.day(-5), contact });
    await scoreBecomes(client, 60);
    const passive = await saveRecord(h.api, 'surveys', { type: 'CSAT', score: 3, date: clock.day(-1), client });
    await scoreBecomes(client, 75);
    await h.api.patch(`/api/v1/surveys/${passive}`, { score: 5 });
    await scoreBecomes(client, 85);
    await h.api.delete(`/api/v1/surveys/${passive}`);
    await scoreBecomes(client, 60);
    // The contact moves to another client: its survey goes with it.
    const other = await newClient('Other Survey Co');
    await h.api.patch(`/api/v1/contacts/${contact}`, { client: other });
    await scoreBecomes(client, 85);
    await scoreBecomes(other, 60);
  });

  it('work: 5 per overdue task, at most 20', async () => {
    const client = await newClient('Work Co');
    await scoreBecomes(client, 85);
    const tasks = Array.from({ length: 5 }, (_, i) => ({ subject: `Late ${i}`, client, status: 'Not started', dueDate: clock.day(-2) }));
    const saved = await h.api.post('/api/v1/tasks', tasks);
    expect(saved.status).toBe(201);
    await scoreBecomes(client, 65);
    for (const id of saved.body.ids.slice(0, 3)) await h.api.patch(`/api/v1/tasks/${id}`, { status: 'Done' });
    await scoreBecomes(client, 75);
  });

  it('renewal: 10 for an Upcoming or Lost renewal due within 90 days', async () => {
    const client = await newClient('Renewal Co');
    await scoreBecomes(client, 85);
    const renewal = await saveRecord(h.api, 'renewals', { name: 'Renewal 1', client, renewalDate: clock.day(30), stage: 'Upcoming' });
    await scoreBecomes(client, 75);
    await h.api.patch(`/api/v1/renewals/${renewal}`, { stage: 'Negotiation' });
    await scoreBecomes(client, 85);
    await h.api.patch(`/api/v1/renewals/${renewal}`, { stage: 'Lost', renewalDate: clock.day(91) });
    await scoreBecomes(client, 85);
    await h.api.patch(`/api/v1/renewals/${renewal}`, { renewalDate: clock.day(90) });
    await scoreBecomes(client, 75);
  });

  it('goals: 10 for a goal At risk or Missed', async () => {
    const client = await newClient('Goal Co');
    await scoreBecomes(client, 85);
    const goal = await saveRecord(h.api, 'goals', { name: 'Adoption', client, status: 'At risk' });
    await scoreBecomes(client, 75);
    await h.api.patch(`/api/v1/goals/${goal}`, { status: 'Achieved' });
    await scoreBecomes(client, 85);
  });

  it('moves once a day for date-relative inputs (a task falling overdue), with the clock, and back when the clock is set back', async () => {
    const client = await newClient('Clock Co');
    await saveRecord(h.api, 'tasks', { subject: 'Due tomorrow', client, status: 'Waiting', dueDate: clock.day(1) });
    // A new client starts at 85 and the task does not move it: the goal after it does, which shows
    // that the reactor has scored the task with today's date before the clock moves.
    await saveRecord(h.api, 'goals', { name: 'Clock goal', client, status: 'At risk' });
    await scoreBecomes(client, 75);
    clock.advanceDays(2);
    try {
      await scoreBecomes(client, 70);
    } finally {
      clock.reset();
    }
    // The clock set back (a wrong clock corrected): the next daily check scores as of the real date again.
    await scoreBecomes(client, 75);
  });

  it('is written to the log with source "health score" (updated_since sees it); an unchanged score appends nothing', async () => {
    const client = await newClient('Log Co');
    await scoreBecomes(client, 85);
    const before = (await h.api.get(`/api/v1/clients/${client}`)).body.data.updatedAt;
    const goal = await saveRecord(h.api, 'goals', { name: 'Retention', client, status: 'Missed' });
    await scoreBecomes(client, 75);
    const since = await h.api.get(`/api/v1/clients?updated_since=${encodeURIComponent(before)}`);
    expect(since.body.data.map((record: { id: string }) => record.id)).toContain(client);
    const stream = await h.svc.service.backends.events.readStream(recordStream(client));
    const last = stream.at(-1)!;
    expect(last.metadata.source).toBe('health score');
    expect(last.data['changes']).toEqual({ healthScore: { from: 85, to: 75 } });
    // An input change that keeps the score appends nothing to the client.
    await h.api.patch(`/api/v1/goals/${goal}`, { description: 'still missed' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await h.svc.service.backends.events.readStream(recordStream(client))).toHaveLength(stream.length);
  });

  it('cannot be written through the API (422, read only)', async () => {
    const client = await newClient('Read Only Co');
    const patched = await h.api.patch(`/api/v1/clients/${client}`, { healthScore: 10 });
    expect(patched.status).toBe(422);
    expect(patched.body.error.message).toContain('read only');
    const posted = await h.api.post('/api/v1/clients', { name: 'Scored', healthScore: 50 });
    expect(posted.status).toBe(422);
  });

  it('a change of only healthScore is not sent to webhooks; a change of health is', async () => {
    const hook = await h.hook('/health', { objects: ['clients'] });
    const client = await newClient('Webhook Co');
    await h.receiver.waitFor('/health', (all) => all.length === 1);
    await scoreBecomes(client, 85);
    await saveRecord(h.api, 'goals', { name: 'Goal', client, status: 'At risk' });
    await scoreBecomes(client, 75);
    const patched = await h.api.patch(`/api/v1/clients/${client}`, { health: 'At Risk' });
    expect(patched.status).toBe(200);
    const requests = await h.receiver.waitFor('/health', (all) => all.length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const received = h.receiver.received('/health').filter((request) => request.body.data.id === client);
    expect(received.map((request) => request.body.event)).toEqual(['clients.created', 'clients.updated']);
    expect(received[1]!.body.source).toBe('api');
    expect(received[1]!.body.data.health).toBe('At Risk');
    expect(requests.length).toBeGreaterThan(0);
    expect(hook).toBeTruthy();
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';

/**
 * Bulk events (spec 6.2 and PRODUCT.md): more than 20 records of one object in one action become
 * `<object>.<kind>.bulk` events of at most 500 ids; 20 stay single events.
 */

let h: WebhookHarness;

beforeAll(async () => {
  h = await startWebhookHarness();
});

afterAll(async () => {
  await h?.close();
});

const hookAt = (path: string, objects: string[]) => h.hook(path, { objects });
const quiet = (ms = 1500) => new Promise((resolve) => setTimeout(resolve, ms));

describe('bulk events', () => {
  it('20 records of one object in one request stay 20 single events', async () => {
    await hookAt('/twenty', ['tasks']);
    const saved = await h.api.post('/api/v1/tasks', Array.from({ length: 20 }, (_, i) => ({ subject: `Twenty ${i}`, status: 'Done' })));
    expect(saved.status).toBe(201);
    const requests = await h.receiver.waitFor('/twenty', (all) => all.length === 20);
    expect(new Set(requests.map((request) => request.body.event))).toEqual(new Set(['tasks.created']));
    expect(new Set(requests.map((request) => request.body.data.id))).toEqual(new Set(saved.body.ids));
    await quiet();
    expect(h.receiver.received('/twenty')).toHaveLength(20);
  });

  it('21 records become one bulk event with count and ids; the records are fetched through the API', async () => {
    await hookAt('/twenty-one', ['contacts']);
    const saved = await h.api.post('/api/v1/contacts', { records: Array.from({ length: 21 }, (_, i) => ({ firstName: 'Bulk', lastName: `${i}` })) });
    expect(saved.status).toBe(201);
    const [bulk] = await h.receiver.waitFor('/twenty-one', (all) => all.length === 1);
    expect(bulk!.headers['x-svc-event']).toBe('contacts.created.bulk');
    expect(bulk!.body).toMatchObject({ event: 'contacts.created.bulk', object: 'contacts', source: 'api', data: { count: 21 } });
    expect(new Set(bulk!.body.data.ids)).toEqual(new Set(saved.body.ids));
    expect(bulk!.body.id).toMatch(/^[0-9a-f-]{36}$/);
    await quiet();
    expect(h.receiver.received('/twenty-one')).toHaveLength(1);
  });

  it('counts kinds together per object: 10 updates and 15 creations in one request are an updated.bulk and a created.bulk', async () => {
    await hookAt('/mixed', ['meetings']);
    const start = '2026-03-01T10:00:00.000Z';
    const existing = await h.api.post('/api/v1/meetings', Array.from({ length: 10 }, (_, i) => ({ title: `Mixed ${i}`, start, status: 'Scheduled' })));
    await h.receiver.waitFor('/mixed', (all) => all.length === 10);
    const mixed = await h.api.post('/api/v1/meetings', [
      ...existing.body.ids.map((id: string) => ({ id, status: 'Completed' })),
      ...Array.from({ length: 15 }, (_, i) => ({ title: `Mixed new ${i}`, start, status: 'Scheduled' })),
    ]);
    expect(mixed.status).toBe(200);
    const requests = await h.receiver.waitFor('/mixed', (all) => all.length === 12);
    const bulks = requests.slice(10).map((request) => request.body);
    expect(bulks.map((body) => body.event).sort()).toEqual(['meetings.created.bulk', 'meetings.updated.bulk']);
    expect(bulks.find((body) => body.event === 'meetings.updated.bulk')!.data.count).toBe(10);
    expect(bulks.find((body) => body.event === 'meetings.created.bulk')!.data.count).toBe(15);
  });

  it('1,200 records of one object in one action become three bulk events of 500, 500 and 200 ids', async () => {
    await hookAt('/import', ['usageMetrics']);
    // One action of 1,200 records (an import batch), appended as the import will append it.
    const actionId = randomUUID();
    const ids = Array.from({ length: 1200 }, () => randomUUID());
    // All at once: the log's group commit writes them in a few commits (one by one, 1,200 fsyncs
    // took over 20 s on a loaded machine).
    const events = h.svc.service.backends.events;
    await Promise.all(ids.map((recordId) =>
      events.append(
        recordStream(recordId),
        [
          {
            id: randomUUID(),
            type: 'RecordCreated',
            data: { schemaVersion: 1, workspaceId: h.ws.id, object: 'usageMetrics', recordId, fields: { name: `Metric ${recordId}`, aggregation: 'Sum' } },
            metadata: {
              source: 'import',
              actor: { type: 'user', id: 'ops', name: 'ops' },
              actionId,
              correlationId: actionId,
              causationId: actionId,
              actionCounts: { usageMetrics: 1200 },
            },
          },
        ],
        { expectedRevision: 'no_stream' },
      ),
    ));
    // The bulk events list the ids in log order.
    const logged = (await events.readAll({ from: 'start', maxCount: 100_000 }))
      .filter((event) => event.metadata['actionId'] === actionId)
      .map((event) => String(event.data['recordId']));
    expect(new Set(logged)).toEqual(new Set(ids));
    const received = await h.receiver.waitFor('/import', (all) => all.length === 3, 20_000);
    // Deliveries may arrive in any order (spec 6.4: parallel sends); the chunks are taken in the
    // order of the log by their first id, and together they are the log's ids in its order.
    const requests = [...received].sort((a, b) => logged.indexOf(a.body.data.ids[0]) - logged.indexOf(b.body.data.ids[0]));
    expect(requests.map((request) => request.body.data.count)).toEqual([500, 500, 200]);
    expect(requests.map((request) => request.body.data.ids).flat()).toEqual(logged);
    expect(new Set(requests.map((request) => request.body.id)).size).toBe(3);
    for (const request of requests) expect(request.body).toMatchObject({ event: 'usageMetrics.created.bulk', source: 'import' });
  });
});

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventStore, NewEvent, RecordedEvent } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { createWebhookLogView } from '../../src/webhooks/logView.js';
import type { WebhookStore } from '../../src/webhooks/port.js';

/**
 * The fan-out's view of a workspace's webhook timeline (read once per batch): it must hold every
 * webhook event logged before it is asked, and, asked again with nothing new in the stream, it
 * reads no event of the stream again (the fan-out asks on every batch of every POST load).
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-logview-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const event = (type: string, data: Record<string, unknown>): NewEvent => {
  const actionId = randomUUID();
  return {
    id: randomUUID(),
    type,
    data: { schemaVersion: 1, workspaceId: 'w', ...data },
    metadata: { source: 'api', actor: { type: 'system', id: 'test', name: 'test' }, actionId, correlationId: actionId, causationId: actionId },
  };
};

describe('the webhook log view', () => {
  let events: EventStore;
  let read: RecordedEvent[];
  let view: ReturnType<typeof createWebhookLogView>;

  beforeEach(() => {
    const store = openSqliteEventStore({ path: join(dir, `${randomUUID()}.db`) });
    read = [];
    // Counts the events each read of the store hands back.
    events = Object.assign(Object.create(store) as EventStore, {
      readStream: async (...args: Parameters<EventStore['readStream']>) => {
        const found = await store.readStream(...args);
        read.push(...found);
        return found;
      },
    });
    view = createWebhookLogView({ events, webhooks: {} as WebhookStore, logger: pino({ level: 'silent' }) });
  });
  afterEach(async () => {
    await events.close();
  });

  it('holds the webhook events logged before each question, in log order', async () => {
    expect(await view.timeline('w')).toEqual([]);
    await events.append('workspace-w', [event('ObjectAdded', { key: 'clients' }), event('WebhookCreated', { webhookId: 'A', events: 'all', objects: 'all' })], { expectedRevision: 'any' });
    expect((await view.timeline('w')).map((entry) => [entry.webhookId, entry.type])).toEqual([['A', 'WebhookCreated']]);
    await events.append('workspace-w', [event('WebhookSwitchedOff', { webhookId: 'A', reason: 'r' }), event('WebhookCreated', { webhookId: 'B', events: ['created'], objects: 'all' })], { expectedRevision: 'any' });
    const timeline = await view.timeline('w');
    expect(timeline.map((entry) => [entry.webhookId, entry.type])).toEqual([['A', 'WebhookCreated'], ['A', 'WebhookSwitchedOff'], ['B', 'WebhookCreated']]);
    expect(timeline[2]!.events).toEqual(['created']);
    expect(timeline[0]!.position < timeline[1]!.position && timeline[1]!.position < timeline[2]!.position).toBe(true);
  });

  it('asked again with nothing new in the stream, reads no event of it again', async () => {
    await events.append('workspace-w', [event('ObjectAdded', { key: 'clients' })], { expectedRevision: 'any' });
    await view.timeline('w');
    read = [];
    for (let i = 0; i < 3; i++) expect(await view.timeline('w')).toEqual([]);
    expect(read).toEqual([]);
    await events.append('workspace-w', [event('WebhookCreated', { webhookId: 'A', events: 'all', objects: 'all' })], { expectedRevision: 'any' });
    expect((await view.timeline('w')).map((entry) => entry.webhookId)).toEqual(['A']);
    expect(read.map((e) => e.type)).toEqual(['WebhookCreated']);
  });
});

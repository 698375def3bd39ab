import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { formatPosition } from '../../src/eventstore/position.js';
import { latestState, recipientsAt, timelineOf } from '../../src/webhooks/timeline.js';

/** Who receives a change at a log position, by the log alone (issue 22 item 4): given, when, then. */

const at = (n: number) => formatPosition(BigInt(n));
let revision = 0;
const logged = (n: number, type: string, data: Record<string, unknown>): RecordedEvent => ({
  id: `e${n}`,
  type,
  stream: 'workspace-w',
  revision: revision++,
  position: at(n),
  created: new Date(0),
  data: { schemaVersion: 1, workspaceId: 'w', ...data },
  metadata: { source: 'app', actor: { type: 'user', id: 'x', name: 'x' }, actionId: 'a', correlationId: 'a', causationId: 'a' },
});
const created = (n: number, id: string, filters: Record<string, unknown> = {}) => logged(n, 'WebhookCreated', { webhookId: id, events: 'all', objects: 'all', ...filters });
const off = (n: number, id: string, reason?: string) => logged(n, 'WebhookSwitchedOff', { webhookId: id, ...(reason ? { reason } : {}) });
const on = (n: number, id: string) => logged(n, 'WebhookSwitchedOn', { webhookId: id });
const deleted = (n: number, id: string) => logged(n, 'WebhookDeleted', { webhookId: id });
const changed = (n: number, id: string, filters: Record<string, unknown>) => logged(n, 'WebhookChanged', { webhookId: id, name: 'x', url: 'https://x.test', events: 'all', objects: 'all', ...filters });

describe('recipientsAt', () => {
  it.each([
    { given: [created(10, 'A')], change: 20, then: ['A'], why: 'on since before the change' },
    { given: [created(30, 'A')], change: 20, then: [], why: 'created after the change' },
    { given: [created(10, 'A'), off(15, 'A')], change: 20, then: [], why: 'off at the change' },
    { given: [created(10, 'A'), off(15, 'A'), on(30, 'A')], change: 20, then: [], why: 'made while off, on again later: never sent' },
    { given: [created(10, 'A'), off(30, 'A')], change: 20, then: [], why: 'waiting when switched off: skipped' },
    { given: [created(10, 'A'), off(30, 'A'), on(40, 'A')], change: 20, then: [], why: 'switched off after the change, on again: still skipped' },
    { given: [created(10, 'A'), off(12, 'A'), on(15, 'A')], change: 20, then: ['A'], why: 'on again before the change' },
    { given: [created(10, 'A'), deleted(15, 'A')], change: 20, then: [], why: 'deleted before the change' },
    { given: [created(10, 'A'), deleted(30, 'A')], change: 20, then: [], why: 'waiting when deleted: never sent' },
    { given: [created(10, 'A'), on(30, 'A')], change: 20, then: ['A'], why: 'a repeated switch-on changes nothing' },
    { given: [created(10, 'A', { objects: ['tasks'] })], change: 20, then: [], why: 'another object' },
    { given: [created(10, 'A', { events: ['deleted'] })], change: 20, then: [], why: 'another kind' },
    { given: [created(10, 'A'), created(11, 'B'), off(15, 'B')], change: 20, then: ['A'], why: 'each webhook on its own' },
    { given: [on(5, 'A'), created(10, 'A')], change: 20, then: ['A'], why: 'events of a webhook before its creation are ignored' },
    { given: [created(10, 'A'), changed(15, 'A', { objects: ['tasks'] })], change: 20, then: [], why: 'edited to another object before the change' },
    { given: [created(10, 'A', { objects: ['tasks'] }), changed(15, 'A', { objects: ['clients'] })], change: 20, then: ['A'], why: 'edited to this object before the change' },
    { given: [created(10, 'A'), changed(30, 'A', { events: ['deleted'] })], change: 20, then: ['A'], why: 'edited after the change: the change keeps its recipients' },
    { given: [created(10, 'A'), off(12, 'A'), changed(15, 'A', {})], change: 20, then: [], why: 'an edit does not switch a webhook on' },
  ])('$why', ({ given, change, then }) => {
    expect(recipientsAt(timelineOf(given), at(change), 'clients', 'updated')).toEqual(then);
  });

  it('ignores the workspace stream\'s other events', () => {
    const timeline = timelineOf([logged(1, 'ApiKeyCreated', { keyId: 'k' }), created(2, 'A'), logged(3, 'WebhookTestSent', { webhookId: 'A' })]);
    expect(timeline.map((entry) => entry.type)).toEqual(['WebhookCreated']);
  });
});

describe('latestState', () => {
  it.each([
    { given: [created(1, 'A')], then: { enabled: true, reason: null } },
    { given: [created(1, 'A'), off(2, 'A')], then: { enabled: false, reason: 'switched off by an administrator' } },
    { given: [created(1, 'A'), off(2, 'A', 'switched off automatically: 20 failed attempts')], then: { enabled: false, reason: 'switched off automatically: 20 failed attempts' } },
    { given: [created(1, 'A'), off(2, 'A'), on(3, 'A')], then: { enabled: true, reason: null } },
    { given: [created(1, 'B')], then: null },
    { given: [created(1, 'A'), off(2, 'A'), changed(3, 'A', {})], then: { enabled: false, reason: 'switched off by an administrator' } },
  ])('$given.length events -> $then', ({ given, then }) => {
    expect(latestState(timelineOf(given), 'A')).toEqual(then);
  });
});

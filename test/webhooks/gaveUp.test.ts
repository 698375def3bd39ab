import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startDeliveryLoop } from '../../src/webhooks/deliveryLoop.js';
import type { WebhookSender } from '../../src/webhooks/httpsSender.js';
import type { Webhook } from '../../src/webhooks/port.js';
import { openSqliteWebhookStore } from '../../src/webhooks/sqlite/index.js';
import { until } from '../support/until.js';

/**
 * Operational events (issue 29): a delivery that gives up for good, and a webhook switched off
 * automatically, are logged at warn with the webhook, workspace, event, reason and last response
 * code, and never with the signing secret.
 */

const SECRET = 'whsec_never_in_a_log_line';
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function setup(webhook: Partial<Webhook>) {
  const dir = mkdtempSync(join(tmpdir(), 'csr-gave-up-'));
  dirs.push(dir);
  const store = openSqliteWebhookStore({ path: join(dir, 'webhooks.db') });
  const lines: string[] = [];
  const hook: Webhook = {
    id: 'w-1',
    workspaceId: 'ws-1',
    name: 'Gives up',
    url: 'https://receiver.example/hooks',
    events: 'all',
    objects: 'all',
    enabled: true,
    disabledReason: null,
    secret: SECRET,
    createdAt: '2020-01-01T00:00:00.000Z',
    consecutiveFailures: 0,
    lastSuccessAt: null,
    ...webhook,
  };
  return { store, lines, hook };
}

const refusing: WebhookSender = { send: async () => ({ ok: false, status: 503, error: 'the receiver answered 503' }), close() {} };

/** The loop logs from its own turns: waits for the lines with a deadline (it counted 200 looks of 10 ms). */
const waitForLines = (lines: string[], count: number) => until(() => lines.length >= count, 20_000, `${count} log lines`);

describe('warn lines when a delivery gives up', () => {
  it('logs a final failure with webhook id, workspace, event id, reason and response code, without the secret', async () => {
    const { store, lines, hook } = setup({});
    await store.createWebhook(hook);
    const payload = { id: 'evt-1', workspaceId: 'ws-1', event: 'clients.created', object: 'clients', source: 'api', occurredAt: new Date().toISOString(), data: { id: 'r1' } };
    await store.enqueue([{ payload, webhookIds: [hook.id] }], new Date().toISOString());
    const loop = startDeliveryLoop({ webhooks: store, sender: refusing, logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }), clock: () => new Date(), retryDelaysMs: [], timeoutMs: 1_000, onSwitchedOff: async () => {} });
    await waitForLines(lines, 1);
    await loop.stop();
    await store.close();
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 40,
      msg: 'webhook delivery failed for good: no more attempts',
      webhookId: 'w-1',
      workspace: 'ws-1',
      eventId: 'evt-1',
      attempts: 1,
      responseCode: 503,
      reason: 'the receiver answered 503',
    });
    expect(lines.join('')).not.toContain(SECRET);
  });

  it('logs an automatic switch-off with its reason and the last response code, without the secret', async () => {
    const { store, lines, hook } = setup({ consecutiveFailures: 19 });
    await store.createWebhook(hook);
    const payload = { id: 'evt-2', workspaceId: 'ws-1', event: 'clients.updated', object: 'clients', source: 'api', occurredAt: new Date().toISOString(), data: { id: 'r2' } };
    await store.enqueue([{ payload, webhookIds: [hook.id] }], new Date().toISOString());
    const loop = startDeliveryLoop({ webhooks: store, sender: refusing, logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }), clock: () => new Date(), retryDelaysMs: [], timeoutMs: 1_000, onSwitchedOff: async () => {} });
    await waitForLines(lines, 2);
    await loop.stop();
    expect((await store.webhookById(hook.id))!.enabled).toBe(false);
    await store.close();
    const parsed = lines.map((line) => JSON.parse(line));
    expect(parsed.map((line) => line.msg)).toEqual(['webhook delivery failed for good: no more attempts', 'webhook switched off automatically']);
    expect(parsed[1]).toMatchObject({ level: 40, webhookId: 'w-1', workspace: 'ws-1', failures: 20, lastResponseCode: 503, reason: expect.stringMatching(/^switched off automatically: 20 failed attempts in a row/) });
    expect(lines.join('')).not.toContain(SECRET);
  });
});

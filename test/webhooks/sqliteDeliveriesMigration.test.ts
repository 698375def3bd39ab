import { Sqlite } from '../../src/sqlite/driver.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteWebhookStore } from '../../src/webhooks/sqlite/index.js';
import { createWebhook, samplePayload, at } from '../contract/webhookstore.contract.js';

/** A webhooks.db made before resends (deliveries unique per webhook and event for every row). */
const dir = mkdtempSync(join(tmpdir(), 'csr-deliveries-migration-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The deliveries table's columns in the first release; later releases added the others. */
const FIRST_DELIVERY_COLUMNS = `id INTEGER PRIMARY KEY AUTOINCREMENT, webhook_id TEXT NOT NULL, event_id TEXT NOT NULL, event TEXT NOT NULL,
  status TEXT NOT NULL, response_code INTEGER, attempts INTEGER NOT NULL DEFAULT 0, error TEXT, created_at TEXT NOT NULL,
  last_attempt_at TEXT, next_attempt_at TEXT, claimed_until TEXT`;

describe('SQLite webhook store: deliveries made before resends', () => {
  it('are copied once into the new shape: ids, statuses and the id sequence kept, resends then allowed', async () => {
    const path = join(dir, 'webhooks.db');
    const old = new Sqlite(path);
    old.exec(`CREATE TABLE deliveries (${FIRST_DELIVERY_COLUMNS}, UNIQUE (webhook_id, event_id))`);
    old.prepare("INSERT INTO deliveries (id, webhook_id, event_id, event, status, attempts, response_code, created_at) VALUES (41, 'w', 'e1', 'clients.created', 'delivered', 1, 204, 'T')").run();
    old.prepare("INSERT INTO deliveries (id, webhook_id, event_id, event, status, created_at) VALUES (42, 'w', 'e2', 'clients.created', 'waiting', 'T')").run();
    old.prepare('DELETE FROM deliveries WHERE id = 42').run();
    old.close();

    const store = openSqliteWebhookStore({ path });
    expect(await store.deliveryById(41)).toMatchObject({ status: 'delivered', attempts: 1, responseCode: 204, cause: null, originalId: null });
    const hook = await createWebhook(store);
    const event = samplePayload(hook.workspaceId);
    const [fanned] = await store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(1));
    // 42 was given out once: never again.
    expect(fanned!.id).toBe(43);
    expect(await store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(2))).toEqual([]);
    const [resent] = await store.redeliver([{ payload: event, webhookId: hook.id, cause: 'resend', originalId: fanned!.id }], at(3));
    expect(resent).toMatchObject({ cause: 'resend', originalId: 43 });
    // (An ignored fan-out repeat may use up an id; ids only ever grow.)
    expect(resent!.id).toBeGreaterThan(43);
    await store.close();

    // Opening again changes nothing more.
    const reopened = openSqliteWebhookStore({ path });
    expect((await reopened.deliveries(hook.id, 10)).map((d) => d.id)).toEqual([resent!.id, 43]);
    expect(await reopened.deliveryById(41)).toMatchObject({ status: 'delivered' });
    await reopened.close();
  });

  it('a webhooks table made before listen sessions gets their column, its webhooks staying ordinary ones the dispatchers send', async () => {
    const path = join(dir, 'before-listen.db');
    const old = new Sqlite(path);
    old.exec(`CREATE TABLE webhooks (
      id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, name TEXT NOT NULL, url TEXT NOT NULL, events TEXT NOT NULL, objects TEXT NOT NULL,
      enabled INTEGER NOT NULL, disabled_reason TEXT, secret TEXT NOT NULL, created_at TEXT NOT NULL,
      consecutive_failures INTEGER NOT NULL DEFAULT 0, last_success_at TEXT)`);
    old.prepare(`INSERT INTO webhooks (id, workspace_id, name, url, events, objects, enabled, secret, created_at) VALUES ('w-old', 'ws', 'Old', 'https://x.example/h', '"all"', '"all"', 1, 's', 'T')`).run();
    old.close();
    const store = openSqliteWebhookStore({ path });
    const before = await store.webhookById('w-old');
    expect(before).toMatchObject({ id: 'w-old', enabled: true });
    expect(before).not.toHaveProperty('listener');
    await store.enqueue([{ payload: samplePayload('ws'), webhookIds: ['w-old'] }], at(1));
    expect(await store.claimDue(at(2), at(32), 10, () => 10)).toHaveLength(1);
    const listener = await createWebhook(store, { workspaceId: 'ws', listener: true });
    expect(await store.webhookById(listener.id)).toMatchObject({ listener: true });
    await store.close();
  });

  it('deliveries made before the last attempt\'s headers were kept get their columns: null until the next attempt settles', async () => {
    const path = join(dir, 'before-headers.db');
    const old = new Sqlite(path);
    old.exec(`CREATE TABLE deliveries (${FIRST_DELIVERY_COLUMNS}, cause TEXT, original_id INTEGER)`);
    old.prepare("INSERT INTO deliveries (id, webhook_id, event_id, event, status, attempts, response_code, created_at) VALUES (7, 'w', 'e1', 'clients.created', 'retrying', 1, 500, 'T')").run();
    old.close();
    const store = openSqliteWebhookStore({ path });
    expect(await store.deliveryById(7)).toMatchObject({ status: 'retrying', lastSentAt: null, lastSignature: null });
    const signature = 'sha256=' + 'e'.repeat(64);
    await store.settle([
      { deliveryId: 7, webhookId: 'w', succeeded: true, status: 'delivered', attempts: 2, responseCode: 204, error: null, lastAttemptAt: at(3), nextAttemptAt: null, sentAt: at(2), signature },
    ]);
    expect(await store.deliveryById(7)).toMatchObject({ status: 'delivered', lastSentAt: at(2), lastSignature: signature });
    await store.close();
  });
});

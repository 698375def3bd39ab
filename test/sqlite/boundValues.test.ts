import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import type { NewEvent } from '../../src/eventstore/port.js';
import { formatPosition } from '../../src/eventstore/position.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';
import { openSqliteSetupStore } from '../../src/setup/sqlite/index.js';
import { Sqlite } from '../../src/sqlite/driver.js';
import { openSqliteWebhookStore } from '../../src/webhooks/sqlite/index.js';

/**
 * The rule of `src/sqlite/file.ts`: in a statement with ORDER BY or a join, a bound value compared in
 * the WHERE is written `+?` (BOUND_VALUE), a LIMIT or OFFSET `CAST(? AS INTEGER)` (BOUND_COUNT).
 * A bare `?` there makes SQLite 3.54 (Node 22.14+ and 24) parse and plan the statement again on
 * every run, which no result shows: so the statements the embedded stores prepare are checked here.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-bound-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('the embedded stores bind no bare ? in a statement with ORDER BY or a join', async () => {
  const prepared: string[] = [];
  const prepare = Sqlite.prototype.prepare;
  const spy = vi.spyOn(Sqlite.prototype, 'prepare').mockImplementation(function (this: InstanceType<typeof Sqlite>, sql: string) {
    prepared.push(sql);
    return prepare.call(this, sql);
  });
  try {
    const events = openSqliteEventStore({ path: join(dir, 'events.db') });
    const actionId = randomUUID();
    const event = (): NewEvent => ({
      id: randomUUID(),
      type: 'Noted',
      data: {},
      metadata: { source: 'api', actor: { type: 'system', id: 'test', name: 'test' }, actionId, correlationId: actionId, causationId: actionId },
    });
    const { position } = await events.append('record-1', [event()], { expectedRevision: 'no_stream' });
    await events.append('record-1', [event()], { expectedRevision: 0 });
    await events.readStream('record-1');
    await events.readStream('record-1', { direction: 'backwards', maxCount: 1 });
    await events.close();

    const reads = openSqliteReadStore({ path: join(dir, 'read.db') });
    const at = '2026-01-01T00:00:00.000Z';
    const document = { workspaceId: 'ws', object: 'clients', id: randomUUID(), name: 'Acme', fields: { industry: 'Retail', tier: 'Gold' } };
    await reads.transaction(async (tx) => {
      await tx.put({ ...document, calculated: {}, createdAt: at, updatedAt: at, createdPosition: position, revision: 0 });
      await tx.findAll('ws', 'clients', [{ field: 'industry', value: 'retail' }]);
      await tx.setCheckpoint('records', formatPosition(1n));
    });
    const base = { workspaceId: 'ws', object: 'clients', limit: 1, offset: 1 };
    await reads.find({ ...base, filters: [] });
    await reads.find({ ...base, filters: [{ field: 'industry', value: 'retail' }] });
    await reads.find({ ...base, filters: [{ field: 'industry', value: 'retail' }, { field: 'tier', value: 'gold' }] });
    await reads.find({ ...base, filters: [{ field: 'industry', value: 'retail' }], name: 'acme' });
    await reads.find({ ...base, filters: [{ field: 'industry', value: 'retail' }], updatedSince: at });
    await reads.close();

    const setup = openSqliteSetupStore({ path: join(dir, 'setup.db') });
    await setup.listKeys('ws');
    await setup.listUsers('ws');
    await setup.close();

    const webhooks = openSqliteWebhookStore({ path: join(dir, 'webhooks.db') });
    await webhooks.listWebhooks('ws');
    await webhooks.claimDue(at, at, 10, () => 10);
    await webhooks.deliveries('wh', 10);
    await webhooks.close();
  } finally {
    spy.mockRestore();
  }

  const ordered = prepared.filter((sql) => /\b(ORDER BY|JOIN)\b/i.test(sql));
  // The statements above include the find pages, the stream reads and the list queries of each store.
  expect(ordered.length).toBeGreaterThanOrEqual(10);
  expect(ordered.filter((sql) => /(=|<|>|\bIS)\s*\?/i.test(sql) || /\b(LIMIT|OFFSET)\s+\?/i.test(sql))).toEqual([]);
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NUMBER_SKIPPED, skippedNumbersStream, type NumberSkippedData } from '../../src/events/numbers.js';
import { csrTool, type Csr } from '../support/cli.js';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/**
 * `csr numbers skipped` (issue 39 item 2): the auto numbers no record took, per object, with the
 * reason and when. The embedded store writes a number with its record, so it lists none; what the
 * EventStoreDB audit records (commands/numberAudit) is written here as that audit writes it, the
 * one way to have a skipped number on this store.
 */

let svc: TestService;
let csr: Csr;
let workspace: TestWorkspace;

beforeAll(async () => {
  svc = await startTestService();
  workspace = await svc.workspace();
  csr = csrTool(svc.dataDir);
});
afterAll(() => svc.stop());

describe('csr numbers skipped', () => {
  it('lists none on the embedded store after creates', async () => {
    const api = client(svc.url, (await workspace.key()).key);
    expect((await api.post('/api/v1/clients', [{ name: 'Acme' }, { name: 'Beta' }])).status).toBe(201);
    expect(await csr.json('numbers', 'skipped', '--workspace', workspace.slug)).toEqual([]);
    expect((await csr.run('numbers', 'skipped', '--workspace', workspace.slug, 'clients')).stdout).toBe('(none)\n');
  });

  it('lists each skipped number recorded by the audit with its object, reason and times', async () => {
    const recorded = (number: number, reason: NumberSkippedData['reason']): NumberSkippedData => ({
      schemaVersion: 1, workspaceId: workspace.id, object: 'billing', checkedThrough: 3, field: 'invoiceNumber',
      number, value: `INV-0000${number}`, reason, reservedAt: '2026-12-06T03:00:00.000Z',
    });
    const actionId = randomUUID();
    const metadata = { source: 'automation' as const, actor: { type: 'system' as const, id: 'number-audit', name: 'number audit' }, actionId, correlationId: actionId, causationId: actionId };
    await svc.service.backends.events.append(
      skippedNumbersStream(workspace.id, 'billing'),
      [recorded(5, 'unwritten'), recorded(4, 'unclaimed')].map((data) => ({ id: randomUUID(), type: NUMBER_SKIPPED, data: { ...data }, metadata })),
      { expectedRevision: 'no_stream' },
    );

    const listed = await csr.json<Record<string, unknown>[]>('numbers', 'skipped', '--workspace', workspace.slug);
    expect(listed.map(({ object, value, number, reason, reservedAt }) => ({ object, value, number, reason, reservedAt }))).toEqual([
      { object: 'billing', value: 'INV-00004', number: 4, reason: 'unclaimed', reservedAt: '2026-12-06T03:00:00.000Z' },
      { object: 'billing', value: 'INV-00005', number: 5, reason: 'unwritten', reservedAt: '2026-12-06T03:00:00.000Z' },
    ]);
    expect(listed[0]!['explanation']).toMatch(/never written/);
    expect(Date.parse(String(listed[0]!['recordedAt']))).toBeGreaterThan(Date.parse('2026-01-01'));
    expect(await csr.json('numbers', 'skipped', '--workspace', workspace.slug, 'clients')).toEqual([]);
    const text = (await csr.run('numbers', 'skipped', '--workspace', workspace.slug, 'billing')).stdout;
    expect(text).toMatch(/^object: +billing\nvalue: +INV-00004\n/);
  });

  it('refuses an unknown object and one without an auto number', async () => {
    expect(await csr.fails(1, 'numbers', 'skipped', '--workspace', workspace.slug, 'nothing')).toMatch(/unknown object 'nothing'/);
    expect(await csr.fails(1, 'numbers', 'skipped', '--workspace', workspace.slug, 'contacts')).toMatch(/has no auto-number field/);
    expect(await csr.fails(2, 'numbers', 'skipped')).toMatch(/--workspace/);
  });
});

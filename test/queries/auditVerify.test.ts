import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followers } from '../../projections/registry.js';
import { lagAfter } from '../../projections/status.js';
import { verifyAudit } from '../../queries/auditVerify.js';
import { RECORD_STREAM_PREFIX } from '../../src/events/records.js';
import { RECORDS_PROJECTION, type RecordDocument } from '../../src/readstore/port.js';
import { client, startTestService, type TestService } from '../support/service.js';

/**
 * `csr audit verify`'s read model check (queries/readModelCheck.ts) over a running service's
 * stores: what the CLI tests do not reach (test/cli/audit.test.ts has the edited event, the
 * edited row, the stray and the missing document).
 */

let svc: TestService;
let workspaceId: string;
let other: string;
let api: ReturnType<typeof client>;
let otherApi: ReturnType<typeof client>;

/**
 * Until the records read model and every reactor have taken in the whole log (the reactors' events
 * follow the writes, and the read model takes those in too), and the log has stopped growing: each
 * write's own events are projected before the API answers, but a reactor busy on a loaded machine
 * may append a moment later than any fixed pause.
 */
async function quiet(): Promise<void> {
  const { events, readStore } = svc.service.backends;
  const records = { streamPrefixes: [RECORD_STREAM_PREFIX] };
  const state = async () => `${await events.headPosition()} ${await readStore.checkpoint(RECORDS_PROJECTION)}`;
  const behind = async () => {
    for (const name of followers().filter((follower) => follower.kind !== 'fan-out').map((follower) => follower.name)) {
      if ((await lagAfter(events, await readStore.checkpoint(name), records)).events > 0) return name;
    }
    return null;
  };
  const deadline = Date.now() + 30_000;
  for (let before = await state(); ; ) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await state();
    const lagging = await behind();
    if (now === before && lagging === null) return;
    if (Date.now() > deadline) throw new Error(`the log did not come to rest within 30 s (${lagging ?? 'the log'} still moving)`);
    before = now;
  }
}

const verify = (only?: string) => verifyAudit(svc.service.backends, only === undefined ? {} : { workspaceId: only });
const documentOf = async (object: string, id: string) => (await svc.service.backends.readStore.get(workspaceId, object, id))!;
const put = (document: RecordDocument) => svc.service.backends.readStore.transaction((tx) => tx.put(document));
const remove = (document: RecordDocument) => svc.service.backends.readStore.transaction((tx) => tx.delete(document.workspaceId, document.object, document.id));

beforeAll(async () => {
  svc = await startTestService();
  const workspace = await svc.workspace();
  workspaceId = workspace.id;
  api = client(svc, (await workspace.key()).key);
  const second = await svc.workspace();
  other = second.id;
  otherApi = client(svc, (await second.key()).key);
});
afterAll(() => svc.stop());

describe('verifyAudit, the read model against the log', () => {
  it('reports a deleted record whose document was put back, and a document the log has as another object', async () => {
    const gone = (await api.post('/api/v1/clients', { name: 'Gone Ltd' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Ana', lastName: 'Lima' })).body.ids[0];
    await quiet();
    const kept = await documentOf('clients', gone);
    expect((await api.delete(`/api/v1/clients/${gone}`)).status).toBeLessThan(300);
    await quiet();
    expect(await verify(workspaceId)).toMatchObject({ ok: true, differences: [] });

    await put(kept);
    const disguised = { ...(await documentOf('contacts', contact)), object: 'clients' };
    await put(disguised);
    const result = await verify(workspaceId);
    expect(result.ok).toBe(false);
    expect(result.differences).toEqual([
      { workspaceId, object: 'clients', id: gone, problem: 'deleted in the log, but still in the read model' },
      { workspaceId, object: 'clients', id: contact, problem: 'in the read model, but no such record in the log' },
    ]);
    await remove(kept);
    await remove(disguised);
    expect(await verify(workspaceId)).toMatchObject({ ok: true, differences: [] });
  });

  it('takes a write that lands while it reads (after the log, before the documents) for no difference', async () => {
    const moving = (await api.post('/api/v1/clients', { name: 'Moving Ltd' })).body.ids[0];
    const leaving = (await api.post('/api/v1/clients', { name: 'Leaving Ltd' })).body.ids[0];
    await quiet();
    const { events } = svc.service.backends;
    let wrote = false;
    // The log answers its first page, then, before verification reads the documents, a change and a
    // delete are written and projected (a 2xx answer means visible).
    const racing = new Proxy(events, {
      get(target, property) {
        if (property === 'readStreams') {
          return async (...args: Parameters<typeof events.readStreams>) => {
            const page = await target.readStreams(...args);
            if (!wrote) {
              wrote = true;
              expect((await api.patch(`/api/v1/clients/${moving}`, { tier: 'Enterprise' })).status).toBe(200);
              expect((await api.delete(`/api/v1/clients/${leaving}`)).status).toBeLessThan(300);
            }
            return page;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const result = await verifyAudit({ ...svc.service.backends, events: racing }, { workspaceId });
    expect(wrote).toBe(true);
    expect(result).toMatchObject({ ok: true, differences: [] });
    await quiet();
    expect(await verify(workspaceId)).toMatchObject({ ok: true, differences: [] });
  });

  it("re-derives roll-ups from the children's documents: a line's amount edited by hand shows in its invoice too", async () => {
    const payer = (await api.post('/api/v1/clients', { name: 'Payer' })).body.ids[0];
    const invoice = (await api.post('/api/v1/billing', { client: payer, status: 'Sent' })).body.ids[0];
    const line = (await api.post('/api/v1/invoiceLines', { invoice, description: 'Seats', quantity: 2, unitPrice: 100 })).body.ids[0];
    await quiet();
    const before = await verify(workspaceId);
    expect(before).toMatchObject({ ok: true, differences: [] });

    // The line's stored amount is what its invoice's subtotal is rolled up from.
    const original = await documentOf('invoiceLines', line);
    await put({ ...original, calculated: { ...original.calculated, amount: 300 } });
    const result = await verify(workspaceId);
    expect(result.records).toBe(before.records);
    expect(result.differences.map(({ object, id }) => [object, id])).toEqual(
      expect.arrayContaining([
        ['invoiceLines', line],
        ['billing', invoice],
      ]),
    );
    expect(result.differences.find((difference) => difference.id === line)!.problem).toContain('amount');
    expect(result.differences.find((difference) => difference.id === invoice)!.problem).toContain('subtotal');
    await put(original);
    expect(await verify(workspaceId)).toMatchObject({ ok: true });
  });

  it("compares only the workspace asked for, and every workspace's records without one", async () => {
    const elsewhere = (await otherApi.post('/api/v1/clients', { name: 'Elsewhere' })).body.ids[0];
    await quiet();
    const document = (await svc.service.backends.readStore.get(other, 'clients', elsewhere))!;
    await put({ ...document, fields: { ...document.fields, name: 'Edited by hand' } });
    expect(await verify(workspaceId)).toMatchObject({ ok: true, differences: [] });
    const all = await verify();
    expect(all.differences).toEqual([{ workspaceId: other, object: 'clients', id: elsewhere, problem: expect.stringContaining('name') }]);
    expect(all.records).toBeGreaterThan((await verify(workspaceId)).records);
    await put(document);
  });
});

import { describe, expect, it } from 'vitest';
import { renderRecords, type RenderDeps } from '../../queries/recordFormat.js';
import { renderStored } from '../../queries/storedFormat.js';
import type { RecordDocument, StoredRecord } from '../../src/readstore/port.js';
import { MARK, renderTemplate, shapeOf } from '../../src/readstore/rendering.js';
import { defaultObject } from '../../src/schema/catalogue.js';
import type { ObjectDef } from '../../src/schema/types.js';

/** Stored renderings (src/readstore/rendering.ts) spliced at read time answer exactly what rendering from the document answers. */

const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const ws = 'w1';

function doc(object: string, n: number, fields: RecordDocument['fields'], calculated: RecordDocument['calculated'] = {}): RecordDocument {
  return {
    workspaceId: ws,
    object,
    id: id(n),
    name: null,
    fields,
    calculated,
    createdAt: '2025-01-02T03:04:05.678Z',
    updatedAt: '2025-01-03T03:04:05.678Z',
    createdPosition: String(n).padStart(20, '0'),
    revision: 1,
  };
}

const clients = defaultObject('clients')!;
const contacts = defaultObject('contacts')!;
const billing = defaultObject('billing')!;
const meetings = defaultObject('meetings')!;

const acme = { ...doc('clients', 1, { name: 'Acme "Q" Inc', health: 'At Risk', renewalDate: '2025-03-01', owner: 'u-ana', arr: 1200.5 }, { openBalance: 99.5 }), name: 'Acme "Q" Inc' };
const lina = { ...doc('contacts', 2, { firstName: 'Lina', lastName: 'Ö', client: id(1) }), name: 'Lina Ö' };
const linked = [acme, lina];

function deps(canAccess: (object: string) => boolean = () => true): RenderDeps & { linkReads: number; userReads: number } {
  const ctx = {
    workspaceId: ws,
    today: '2025-02-01',
    canAccess,
    linkReads: 0,
    userReads: 0,
    readStore: {
      async getMany(_workspaceId: string, object: string, ids: string[]) {
        ctx.linkReads++;
        return linked.filter((document) => document.object === object && ids.includes(document.id));
      },
    },
    async listUsers() {
      ctx.userReads++;
      return [{ id: 'u-ana', workspaceId: ws, name: 'Ana Lima', email: 'ana@x.test', createdAt: '2025-01-01T00:00:00.000Z' }];
    },
  };
  return ctx;
}

/** What the read store hands back: `document()` counts its calls (each is a JSON.parse in SQLite). */
function stored(object: ObjectDef, document: RecordDocument, parses: { n: number }, rendered = renderTemplate(object, document)): StoredRecord {
  return { id: document.id, rendered, document: () => (parses.n++, document) };
}

async function both(object: ObjectDef, documents: RecordDocument[], ctx = deps()) {
  const parses = { n: 0 };
  const spliced = await renderStored(object, documents.map((document) => stored(object, document, parses)), ctx);
  const rendered = (await renderRecords(object, documents, ctx)).map((record) => JSON.stringify(record));
  return { spliced, rendered, parses: parses.n };
}

describe('stored renderings', () => {
  it('answer byte for byte what rendering the document answers, for every kind of field', async () => {
    const cases: [ObjectDef, RecordDocument[]][] = [
      [clients, [acme, doc('clients', 3, { name: 'Bare' }), doc('clients', 4, { name: 'Ghost owner', owner: 'u-gone' })]],
      [contacts, [lina, doc('contacts', 5, { firstName: 'No link' }), doc('contacts', 6, { firstName: 'Dangling', client: id(99) })]],
      [billing, [doc('billing', 7, { client: id(1), billingContact: id(2), status: 'Sent', issueDate: '2025-01-01', paymentTerms: 'Net 15', invoiceNumber: 'INV-7' }, { subtotal: 10, total: 10, balanceDue: 10, dueDate: '2025-01-16' })]],
      [meetings, [doc('meetings', 8, { title: 'Sync', contacts: [id(2), id(98)], client: id(1) }), doc('meetings', 9, { title: 'Empty', contacts: [] })]],
    ];
    for (const [object, documents] of cases) {
      for (const ctx of [deps(), deps((target) => target === object.key)]) {
        const { spliced, rendered } = await both(object, documents, ctx);
        expect(spliced, object.key).toEqual(rendered);
      }
    }
  });

  it('a page reads each linked object once and the users once, and parses a document only for date-relative values of many inputs', async () => {
    const ctx = deps();
    const { parses } = await both(contacts, [lina, doc('contacts', 5, { firstName: 'Also', client: id(1) })], ctx);
    expect(parses).toBe(0);
    expect(ctx.linkReads).toBe(2); // one for renderStored, one for renderRecords
    // Clients' days to renewal come from the renewal date kept in the splice; billing's from the whole document.
    expect((await both(clients, [acme, doc('clients', 3, { name: 'Bare' })])).parses).toBe(0);
    expect((await both(billing, [doc('billing', 7, { client: id(1), status: 'Sent', dueDate: '2025-01-01' }, { balanceDue: 5 })])).parses).toBe(1);
  });

  it('date-relative values follow the day of the read, also for records sharing their inputs', async () => {
    const tasks = defaultObject('tasks')!;
    const page = [doc('tasks', 11, { subject: 'A', status: 'Waiting', dueDate: '2025-02-01' }), doc('tasks', 12, { subject: 'B', status: 'Waiting', dueDate: '2025-02-01' })];
    for (const today of ['2025-01-15', '2025-02-01', '2025-03-01']) {
      const ctx = { ...deps(), today };
      const { spliced, rendered } = await both(tasks, page, ctx);
      expect(spliced, today).toEqual(rendered);
      const renewing = await both(clients, [acme], ctx);
      expect(renewing.spliced).toEqual(renewing.rendered);
    }
  });

  it('keep people, links, lookups and date-relative values as splice points, never as text', () => {
    const template = renderTemplate(contacts, lina)!;
    expect(template).not.toContain('Acme');
    expect(renderTemplate(clients, acme)).not.toContain('Ana Lima');
    expect(renderTemplate(clients, acme)).not.toContain('"daysToRenewal":28');
    expect(template.startsWith(shapeOf(contacts) + MARK)).toBe(true);
  });

  it('are not used when the object was defined otherwise when they were made (a field added since): the document is rendered', async () => {
    const withSegment: ObjectDef = { ...clients, fields: [...clients.fields, { key: 'segment', label: 'Segment', required: false, format: { type: 'text' }, custom: true }] };
    expect(shapeOf(withSegment)).not.toBe(shapeOf(clients));
    const parses = { n: 0 };
    const old = stored(clients, { ...acme, fields: { ...acme.fields, segment: 'Tech' } }, parses);
    const [json] = await renderStored(withSegment, [old], deps());
    const [expected] = await renderRecords(withSegment, [{ ...acme, fields: { ...acme.fields, segment: 'Tech' } }], deps());
    expect(json).toBe(JSON.stringify(expected));
    expect(JSON.parse(json!).segment).toBe('Tech');
  });

  it('are not made when an id holds a separator, and a page mixes stored and rendered records in order', async () => {
    const odd = doc('clients', 10, { name: 'Odd', owner: `u${MARK}x` });
    expect(renderTemplate(clients, odd)).toBeNull();
    const parses = { n: 0 };
    const page = [stored(clients, acme, parses), stored(clients, odd, parses), stored(clients, doc('clients', 3, { name: 'Bare' }), parses, null)];
    const expected = await renderRecords(clients, [acme, odd, doc('clients', 3, { name: 'Bare' })], deps());
    expect(await renderStored(clients, page, deps())).toEqual(expected.map((record) => JSON.stringify(record)));
  });
});

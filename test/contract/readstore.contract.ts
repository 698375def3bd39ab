import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatPosition } from '../../src/eventstore/position.js';
import { filterKey } from '../../src/schema/filterKey.js';
import type { FindQuery, ReadStore, RecordDocument } from '../../src/readstore/port.js';
import { beforeTimer } from '../support/until.js';

/**
 * The ReadStore port's behaviour, run against every adapter (test/contract/readstore.*.test.ts).
 * Every test uses its own workspace ids and projection names, so the suite can run against a
 * shared server next to other suites.
 */
export function readStoreContract(name: string, open: () => Promise<ReadStore> | ReadStore): void {
  describe(`ReadStore contract: ${name}`, () => {
    let store: ReadStore;

    beforeAll(async () => {
      store = await open();
    });

    afterAll(async () => {
      await store?.close();
    });

    const workspace = () => `ws-${randomUUID()}`;
    const projection = () => `records-${randomUUID()}`;
    const at = (second: number, ms = 0) => new Date(Date.UTC(2025, 0, 1, 0, 0, second, ms)).toISOString();

    function doc(workspaceId: string, n: number, overrides: Partial<RecordDocument> = {}): RecordDocument {
      return {
        workspaceId,
        object: 'clients',
        id: randomUUID(),
        name: `Client ${n}`,
        fields: { name: `Client ${n}` },
        calculated: {},
        createdAt: at(n),
        updatedAt: at(n),
        createdPosition: formatPosition(BigInt(n)),
        revision: 0,
        ...overrides,
      };
    }

    async function putAll(...documents: RecordDocument[]): Promise<void> {
      await store.transaction(async (tx) => {
        for (const document of documents) await tx.put(document);
      });
    }

    function query(workspaceId: string, overrides: Partial<FindQuery> = {}): FindQuery {
      return { workspaceId, object: 'clients', filters: [], limit: 100, offset: 0, ...overrides };
    }

    async function ids(q: FindQuery): Promise<string[]> {
      return (await store.find(q)).documents.map((document) => document.id);
    }

    describe('documents', () => {
      it('puts and gets a document with every kind of value as written', async () => {
        const ws = workspace();
        const document = doc(ws, 1, {
          name: null,
          fields: { text: 'Acme', number: 12.5, zero: 0, yes: true, no: false, list: ['a', 'b'], empty: [], nothing: null },
          calculated: { total: 99.99, status: 'Paid' },
          revision: 3,
        });
        await putAll(document);
        expect(await store.get(ws, 'clients', document.id)).toEqual(document);
      });

      it('answers null for an unknown document, workspace or object', async () => {
        const ws = workspace();
        const document = doc(ws, 1);
        await putAll(document);
        expect(await store.get(ws, 'clients', randomUUID())).toBeNull();
        expect(await store.get(workspace(), 'clients', document.id)).toBeNull();
        expect(await store.get(ws, 'contacts', document.id)).toBeNull();
      });

      it('put replaces the whole document, and old values no longer match filters', async () => {
        const ws = workspace();
        const first = doc(ws, 1, { fields: { name: 'Client 1', tier: 'SMB', industry: 'Retail' } });
        await putAll(first);
        const second = { ...first, name: 'Renamed', fields: { name: 'Renamed', tier: 'Enterprise' }, updatedAt: at(5), revision: 1 };
        await putAll(second);
        expect(await store.get(ws, 'clients', first.id)).toEqual(second);
        expect(await ids(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toEqual([]);
        expect(await ids(query(ws, { filters: [{ field: 'industry', value: 'retail' }] }))).toEqual([]);
        expect(await ids(query(ws, { filters: [{ field: 'tier', value: 'enterprise' }] }))).toEqual([first.id]);
        expect(await ids(query(ws, { name: 'client 1' }))).toEqual([]);
        expect(await ids(query(ws, { name: 'renamed' }))).toEqual([first.id]);
        expect((await store.find(query(ws))).total).toBe(1);
        expect((await store.find(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).total).toBe(0);
        expect((await store.find(query(ws, { filters: [{ field: 'tier', value: 'enterprise' }] }))).total).toBe(1);
      });

      it('getMany returns the documents that exist, and nothing for no ids', async () => {
        const ws = workspace();
        const [a, b, c] = [doc(ws, 1), doc(ws, 2), doc(ws, 3)];
        await putAll(a, b, c);
        const found = await store.getMany(ws, 'clients', [c.id, a.id, randomUUID()]);
        expect(found.map((document) => document.id).sort()).toEqual([a.id, c.id].sort());
        expect(found.find((document) => document.id === a.id)).toEqual(a);
        expect(await store.getMany(ws, 'clients', [])).toEqual([]);
        expect(await store.getMany(workspace(), 'clients', [a.id])).toEqual([]);
      });

      it('delete removes the document from get, find, filters and total; deleting again is a no-op', async () => {
        const ws = workspace();
        const [a, b] = [doc(ws, 1, { fields: { tier: 'SMB' } }), doc(ws, 2, { fields: { tier: 'SMB' } })];
        await putAll(a, b);
        await store.transaction(async (tx) => {
          await tx.delete(ws, 'clients', a.id);
          await tx.delete(ws, 'clients', a.id);
          await tx.delete(ws, 'clients', randomUUID());
          await tx.delete(workspace(), 'unknown', randomUUID());
        });
        expect(await store.get(ws, 'clients', a.id)).toBeNull();
        expect(await store.find(query(ws))).toEqual({ documents: [b], total: 1 });
        const filtered = await store.find(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }));
        expect(filtered).toEqual({ documents: [b], total: 1 });
      });

      it('keeps workspaces and objects apart, also for the same id', async () => {
        const [ws1, ws2] = [workspace(), workspace()];
        const id = randomUUID();
        const one = doc(ws1, 1, { id, fields: { tier: 'SMB' } });
        const two = doc(ws2, 2, { id, fields: { tier: 'SMB' } });
        const contact = doc(ws1, 3, { id, object: 'contacts', fields: { tier: 'SMB' } });
        await putAll(one, two, contact);
        expect(await store.get(ws1, 'clients', id)).toEqual(one);
        expect(await store.get(ws2, 'clients', id)).toEqual(two);
        expect(await store.get(ws1, 'contacts', id)).toEqual(contact);
        expect(await store.find(query(ws1, { filters: [{ field: 'tier', value: 'smb' }] }))).toEqual({ documents: [one], total: 1 });
        expect(await store.find(query(ws2))).toEqual({ documents: [two], total: 1 });
        expect(await store.find(query(workspace()))).toEqual({ documents: [], total: 0 });
        await store.transaction((tx) => tx.delete(ws1, 'clients', id));
        expect(await store.get(ws2, 'clients', id)).toEqual(two);
        expect(await store.get(ws1, 'contacts', id)).toEqual(contact);
      });
    });

    describe('stored renderings', () => {
      const rendered = 'shape\u0001{"id":"x","owner":\u0001pu-1\u0001,"n":"é \\" \\u0001"}';

      it('getStoredNow with a shape: a rendering with it may come without its document, any other with it; a change or a delete is seen on the next call', async () => {
        const ws = workspace();
        const other = 'other\u0001{"id":"y"}';
        const [a, b, c] = [doc(ws, 1, { rendered }), doc(ws, 2, { rendered: other }), doc(ws, 3)];
        await putAll(a, b, c);
        const now = (id: string) => {
          const answer = store.getStoredNow(ws, 'clients', id, 'shape\u0001');
          return answer && { id: answer.id, rendered: answer.rendered, document: answer.document?.() };
        };
        const expectNow = (id: string, expected: { id: string; rendered: string | null; document?: RecordDocument } | null, documentOptional = false) => {
          const answer = now(id);
          if (answer === undefined) return;
          if (answer && documentOptional && answer.document === undefined) expect({ ...answer, document: expected?.document }).toEqual(expected);
          else expect(answer).toEqual(expected);
        };
        expectNow(a.id, { id: a.id, rendered, document: a }, true);
        expectNow(b.id, { id: b.id, rendered: other, document: b });
        expectNow(c.id, { id: c.id, rendered: null, document: c });
        expectNow(randomUUID(), null);
        const changed = { ...a, rendered: other, revision: 1 };
        await putAll(changed);
        expectNow(a.id, { id: a.id, rendered: other, document: changed });
        const emptied: RecordDocument = { ...c, rendered: 'shape\u0001', revision: 1 };
        await putAll(emptied);
        expectNow(c.id, { id: c.id, rendered: 'shape\u0001', document: emptied }, true);
        await store.transaction((tx) => tx.delete(ws, 'clients', b.id));
        expectNow(b.id, null);
      });

      it('getStored and getStoredNow give the revision (the ETag of GET one record), with or without a shape, and its change', async () => {
        const ws = workspace();
        const [a, b] = [doc(ws, 1, { rendered, revision: 4 }), doc(ws, 2, { revision: 7 })];
        await putAll(a, b);
        expect((await store.getStored(ws, 'clients', a.id))?.revision).toBe(4);
        expect((await store.getStored(ws, 'clients', b.id))?.revision).toBe(7);
        for (const shape of [undefined, 'shape\u0001', 'other\u0001']) {
          const [nowA, nowB] = [store.getStoredNow(ws, 'clients', a.id, shape), store.getStoredNow(ws, 'clients', b.id, shape)];
          if (nowA !== undefined) expect(nowA?.revision).toBe(4);
          if (nowB !== undefined) expect(nowB?.revision).toBe(7);
        }
        await putAll({ ...a, revision: 5 });
        expect((await store.getStored(ws, 'clients', a.id))?.revision).toBe(5);
        const now = store.getStoredNow(ws, 'clients', a.id, 'shape\u0001');
        if (now !== undefined) expect(now?.revision).toBe(5);
      });

      it('getStoredNow, where the store answers at once, gives a committed change on the next call', async () => {
        const ws = workspace();
        const first = doc(ws, 1, { rendered });
        await putAll(first);
        const changed = { ...first, fields: { tier: 'Enterprise' }, rendered: 'shape\u0001{}', revision: 1 };
        await putAll(changed);
        const answer = store.getStoredNow(ws, 'clients', first.id);
        if (answer !== undefined) expect({ rendered: answer?.rendered, document: answer?.document?.() }).toEqual({ rendered: 'shape\u0001{}', document: changed });
        await store.transaction((tx) => tx.delete(ws, 'clients', first.id));
        expect(store.getStoredNow(ws, 'clients', first.id) ?? null).toBeNull();
      });

      it('keeps a document rendering as written and gives it to getStored and findStored with the document', async () => {
        const ws = workspace();
        const [a, b] = [doc(ws, 1, { rendered, fields: { tier: 'SMB' } }), doc(ws, 2, { fields: { tier: 'SMB' } })];
        await putAll(a, b);
        expect(await store.get(ws, 'clients', a.id)).toEqual(a);
        expect((await store.get(ws, 'clients', a.id))?.rendered).toBe(rendered);
        const stored = await store.getStored(ws, 'clients', a.id);
        expect(stored?.id).toBe(a.id);
        expect(stored?.rendered).toBe(rendered);
        expect(stored?.document?.()).toEqual(a);
        const none = await store.getStored(ws, 'clients', b.id);
        expect(none?.rendered).toBeNull();
        expect(none?.document?.()).toEqual(b);
        expect(await store.getStored(ws, 'clients', randomUUID())).toBeNull();
        expect(await store.getStored(workspace(), 'clients', a.id)).toBeNull();
        // getStoredNow: the same answers, or undefined where the store must be asked.
        const now = (workspaceId: string, id: string) => {
          const answer = store.getStoredNow(workspaceId, 'clients', id);
          return answer && { id: answer.id, rendered: answer.rendered, document: answer.document?.() };
        };
        for (const [workspaceId, id, expected] of [
          [ws, a.id, { id: a.id, rendered, document: a }],
          [ws, b.id, { id: b.id, rendered: null, document: b }],
          [ws, randomUUID(), null],
          [workspace(), a.id, null],
        ] as const) {
          const answer = now(workspaceId, id);
          if (answer !== undefined) expect(answer).toEqual(expected);
        }

        const found = await store.findStored(query(ws, { filters: [{ field: 'tier', value: 'smb' }], limit: 1 }));
        expect(found.total).toBe(2);
        expect(found.records.map((record) => [record.id, record.rendered])).toEqual([[a.id, rendered]]);
        expect(found.records[0]!.document?.()).toEqual(a);
        expect((await store.findStored(query(ws, { offset: 1 }))).records.map((record) => [record.id, record.rendered])).toEqual([[b.id, null]]);
      });

      it('getStored with a shape gives the rendering and revision; the document of a record rendered with another shape, or none, and of an escaped one', async () => {
        const ws = workspace();
        const other = 'other\u0001{"id":"y"}';
        const [a, b, c] = [doc(ws, 1, { rendered, revision: 3 }), doc(ws, 2, { rendered: other }), doc(ws, 3, { fields: { tier: 'a\u0000b' } })];
        await putAll(a, b, c);
        const first = await store.getStored(ws, 'clients', a.id, 'shape\u0001');
        expect([first?.id, first?.rendered, first?.revision]).toEqual([a.id, rendered, 3]);
        // A store may leave out the document of a record rendered with the shape; when it gives it, it is the document.
        if (first!.document) expect(first!.document()).toEqual(a);
        const second = await store.getStored(ws, 'clients', b.id, 'shape\u0001');
        expect([second?.rendered, second?.document?.()]).toEqual([other, b]);
        const third = await store.getStored(ws, 'clients', c.id, 'shape\u0001');
        expect([third?.rendered, third?.document?.()]).toEqual([null, c]);
        expect(await store.getStored(ws, 'clients', randomUUID(), 'shape\u0001')).toBeNull();
      });

      it('findStored with a shape gives the documents of the records whose rendering does not start with it', async () => {
        const ws = workspace();
        const other = 'other\u0001{"id":"y"}';
        const [a, b, c] = [doc(ws, 1, { rendered }), doc(ws, 2, { rendered: other }), doc(ws, 3)];
        await putAll(a, b, c);
        const found = await store.findStored(query(ws), 'shape\u0001');
        expect(found.total).toBe(3);
        expect(found.records.map((record) => [record.id, record.rendered])).toEqual([[a.id, rendered], [b.id, other], [c.id, null]]);
        const [first, second, third] = found.records;
        // A store may leave out the document of a record rendered with the shape; when it gives it, it is the document.
        if (first!.document) expect(first!.document()).toEqual(a);
        expect(second!.document?.()).toEqual(b);
        expect(third!.document?.()).toEqual(c);
      });

      it('findStored gives ids and renderings as written, whatever characters they hold', async () => {
        const ws = workspace();
        const ids = ['a:b', '12:x', 'é-ü', '😀:x', ''];
        const renderings = ['shape\u0001{"a":"b:c"}', null, '', 'shape\u0001😀:\u0001pu-1\u0001}', 'shape\u0001'];
        const documents = ids.map((id, n) => doc(ws, n + 1, renderings[n] === null ? { id } : { id, rendered: renderings[n] }));
        await putAll(...documents);
        for (const shape of [undefined, 'shape\u0001']) {
          const found = await store.findStored(query(ws), shape);
          expect(found.records.map((record) => [record.id, record.rendered])).toEqual(ids.map((id, n) => [id, renderings[n]]));
          expect(found.records[1]!.document?.()).toEqual(documents[1]);
          expect(found.records[2]!.document?.()).toEqual(documents[2]);
        }
        const ascii = await store.findStored(query(ws, { limit: 2 }), 'shape\u0001');
        expect(ascii.records.map((record) => [record.id, record.rendered])).toEqual([[ids[0], renderings[0]], [ids[1], null]]);
      });

      it('a put without a rendering clears the one stored before', async () => {
        const ws = workspace();
        const first = doc(ws, 1, { rendered });
        await putAll(first);
        const second: RecordDocument = { ...first, rendered: null, revision: 1 };
        await putAll(second);
        expect((await store.getStored(ws, 'clients', first.id))?.rendered).toBeNull();
      });
    });

    describe('find', () => {
      it('filters text exactly and case-insensitively', async () => {
        const ws = workspace();
        const acme = doc(ws, 1, { fields: { industry: 'Software' } });
        const other = doc(ws, 2, { fields: { industry: 'Software Services' } });
        const upper = doc(ws, 3, { fields: { industry: 'SOFTWARE' } });
        await putAll(acme, other, upper);
        expect(await ids(query(ws, { filters: [{ field: 'industry', value: filterKey('sOfTwArE') }] }))).toEqual([acme.id, upper.id]);
        expect(await ids(query(ws, { filters: [{ field: 'industry', value: 'soft' }] }))).toEqual([]);
        expect(await ids(query(ws, { filters: [{ field: 'missing', value: 'software' }] }))).toEqual([]);
      });

      it('filters numbers and booleans by their string form', async () => {
        const ws = workspace();
        const a = doc(ws, 1, { fields: { arr: 1200, active: true } });
        const b = doc(ws, 2, { fields: { arr: 1200.5, active: false } });
        const c = doc(ws, 3, { fields: { arr: 0, active: null } });
        await putAll(a, b, c);
        expect(await ids(query(ws, { filters: [{ field: 'arr', value: filterKey(1200) }] }))).toEqual([a.id]);
        expect(await ids(query(ws, { filters: [{ field: 'arr', value: '1200.5' }] }))).toEqual([b.id]);
        expect(await ids(query(ws, { filters: [{ field: 'arr', value: '0' }] }))).toEqual([c.id]);
        expect(await ids(query(ws, { filters: [{ field: 'active', value: filterKey(true) }] }))).toEqual([a.id]);
        expect(await ids(query(ws, { filters: [{ field: 'active', value: 'false' }] }))).toEqual([b.id]);
        expect(await ids(query(ws, { filters: [{ field: 'active', value: 'null' }] }))).toEqual([]);
      });

      it('matches an array (link list) field when any element matches', async () => {
        const ws = workspace();
        const [x, y, z] = [randomUUID(), randomUUID(), randomUUID()];
        const a = doc(ws, 1, { fields: { contacts: [x, y] } });
        const b = doc(ws, 2, { fields: { contacts: [y, y] } });
        const c = doc(ws, 3, { fields: { contacts: [] } });
        await putAll(a, b, c);
        expect(await ids(query(ws, { filters: [{ field: 'contacts', value: x }] }))).toEqual([a.id]);
        expect(await store.find(query(ws, { filters: [{ field: 'contacts', value: y }] }))).toEqual({ documents: [a, b], total: 2 });
        expect(await ids(query(ws, { filters: [{ field: 'contacts', value: z }] }))).toEqual([]);
      });

      it('matches names and filter values case-insensitively beyond ASCII, as filterKey normalises them', async () => {
        const ws = workspace();
        const a = doc(ws, 1, { name: 'ÉCOLE Ünïon', fields: { city: 'STRASSE Ölberg', tags: ['Ärzte', 'x'] } });
        const b = doc(ws, 2, { name: 'ecole union', fields: { city: 'strasse olberg', tags: ['arzte'] } });
        await putAll(a, b);
        expect(await ids(query(ws, { name: 'école ünïon' }))).toEqual([a.id]);
        expect(await ids(query(ws, { name: 'Ecole Union' }))).toEqual([b.id]);
        expect(await ids(query(ws, { filters: [{ field: 'city', value: filterKey('Strasse ÖLBERG') }] }))).toEqual([a.id]);
        expect(await ids(query(ws, { filters: [{ field: 'tags', value: filterKey('ÄRZTE') }] }))).toEqual([a.id]);
      });

      it('keeps any character of text values (U+0000 too, which the API accepts) and finds them by it', async () => {
        const ws = workspace();
        const odd = 'a\u0000b\uE000c\uE0000';
        const a = doc(ws, 1, { name: `N${odd}`, fields: { note: odd, tags: [odd, 'x'] }, calculated: { label: odd }, rendered: `shape\u0001{"note":${JSON.stringify(odd)}}` });
        const b = doc(ws, 2, { name: 'N a b c', fields: { note: 'a b c' } });
        await putAll(a, b);
        expect(await store.get(ws, 'clients', a.id)).toEqual(a);
        expect(await store.find(query(ws, { filters: [{ field: 'note', value: filterKey(odd) }] }))).toEqual({ documents: [a], total: 1 });
        expect(await ids(query(ws, { filters: [{ field: 'tags', value: filterKey(odd) }, { field: 'label', value: filterKey(odd) }] }))).toEqual([a.id]);
        expect(await ids(query(ws, { name: `n${odd}` }))).toEqual([a.id]);
        const stored = await store.findStored(query(ws, { limit: 1 }));
        expect(stored.records.map((record) => [record.rendered, record.document?.()])).toEqual([[a.rendered, a]]);
      });

      it('with limit 0 answers no documents and still the total', async () => {
        const ws = workspace();
        await putAll(doc(ws, 1, { fields: { tier: 'SMB' } }), doc(ws, 2, { fields: { tier: 'SMB' } }), doc(ws, 3));
        expect(await store.find(query(ws, { limit: 0 }))).toEqual({ documents: [], total: 3 });
        expect(await store.find(query(ws, { limit: 0, filters: [{ field: 'tier', value: 'smb' }] }))).toEqual({ documents: [], total: 2 });
        expect(await store.findStored(query(ws, { limit: 0, name: 'client 3' }))).toEqual({ records: [], total: 1 });
      });

      it('filters calculated values like fields', async () => {
        const ws = workspace();
        const a = doc(ws, 1, { calculated: { paymentStatus: 'Overdue', balanceDue: 10 } });
        const b = doc(ws, 2, { calculated: { paymentStatus: 'Paid', balanceDue: 0 } });
        await putAll(a, b);
        expect(await ids(query(ws, { filters: [{ field: 'paymentStatus', value: 'overdue' }] }))).toEqual([a.id]);
        expect(await ids(query(ws, { filters: [{ field: 'balanceDue', value: '0' }] }))).toEqual([b.id]);
      });

      it('ANDs several filters, whatever their order, with a total of the intersection', async () => {
        const ws = workspace();
        const documents = Array.from({ length: 30 }, (_, i) =>
          doc(ws, i + 1, { fields: { tier: i % 2 === 0 ? 'SMB' : 'Enterprise', region: i % 3 === 0 ? 'EU' : 'US', tags: [`t${i % 5}`] } }),
        );
        await putAll(...documents);
        const expected = documents.filter((_, i) => i % 2 === 0 && i % 3 === 0 && i % 5 === 0).map((document) => document.id);
        expect(expected.length).toBe(1);
        const filters = [
          { field: 'tier', value: 'smb' },
          { field: 'region', value: 'eu' },
          { field: 'tags', value: 't0' },
        ];
        for (const order of [filters, [...filters].reverse()]) {
          const result = await store.find(query(ws, { filters: order }));
          expect(result.documents.map((document) => document.id)).toEqual(expected);
          expect(result.total).toBe(1);
        }
        const twoFilters = await store.find(query(ws, { filters: filters.slice(0, 2), limit: 2 }));
        const expectedTwo = documents.filter((_, i) => i % 6 === 0).map((document) => document.id);
        expect(twoFilters.total).toBe(expectedTwo.length);
        expect(twoFilters.documents.map((document) => document.id)).toEqual(expectedTwo.slice(0, 2));
      });

      it('matches the name exactly and case-insensitively, together with filters', async () => {
        const ws = workspace();
        const a = doc(ws, 1, { name: 'Acme Inc', fields: { tier: 'SMB' } });
        const b = doc(ws, 2, { name: 'ACME INC', fields: { tier: 'Enterprise' } });
        const c = doc(ws, 3, { name: 'Acme Incorporated' });
        const d = doc(ws, 4, { name: null });
        await putAll(a, b, c, d);
        expect(await store.find(query(ws, { name: 'acme inc' }))).toEqual({ documents: [a, b], total: 2 });
        expect(await ids(query(ws, { name: 'aCmE iNc', filters: [{ field: 'tier', value: 'enterprise' }] }))).toEqual([b.id]);
        expect(await ids(query(ws, { name: 'acme' }))).toEqual([]);
        expect(await ids(query(ws, { name: '' }))).toEqual([]);
      });

      it('findEach answers each query as find does, in the queries\' order, names and filters mixed, none for none', async () => {
        const ws = workspace();
        const a = doc(ws, 1, { name: 'Acme', fields: { tier: 'SMB' } });
        const b = doc(ws, 2, { name: 'acme', fields: { tier: 'Enterprise' } });
        const c = doc(ws, 3, { name: 'Globex', fields: { tier: 'SMB' } });
        await putAll(a, b, c);
        const queries = [
          query(ws, { name: 'globex', limit: 2 }),
          query(ws, { filters: [{ field: 'tier', value: 'smb' }] }),
          query(ws, { name: 'ACME', limit: 2 }),
          query(ws, { name: 'Initech', limit: 2 }),
          query(ws, { object: 'contacts', name: 'acme', limit: 2 }),
          query(workspace(), { filters: [{ field: 'tier', value: 'smb' }] }),
          query(ws, { name: 'acme', limit: 1 }),
        ];
        const each = await store.findEach(queries);
        expect(each).toEqual(await Promise.all(queries.map((q) => store.find(q))));
        expect(each.map(({ documents, total }) => [documents.map((document) => document.id), total])).toEqual([
          [[c.id], 1],
          [[a.id, c.id], 2],
          [[a.id, b.id], 2],
          [[], 0],
          [[], 0],
          [[], 0],
          [[a.id], 2],
        ]);
        expect(await store.findEach([])).toEqual([]);
      });

      it('updatedSince is strict and compares moments, not strings', async () => {
        const ws = workspace();
        const a = doc(ws, 1, { updatedAt: at(10) });
        const b = doc(ws, 2, { updatedAt: at(10, 1) });
        const c = doc(ws, 3, { updatedAt: at(11, 500), fields: { tier: 'SMB' } });
        await putAll(a, b, c);
        expect(await ids(query(ws, { updatedSince: at(10) }))).toEqual([b.id, c.id]);
        expect(await ids(query(ws, { updatedSince: at(9, 999) }))).toEqual([a.id, b.id, c.id]);
        expect(await ids(query(ws, { updatedSince: at(11, 500) }))).toEqual([]);
        // Same moments written without milliseconds or with an offset.
        expect(await ids(query(ws, { updatedSince: '2025-01-01T00:00:11Z' }))).toEqual([c.id]);
        expect(await ids(query(ws, { updatedSince: '2025-01-01T01:00:10+01:00' }))).toEqual([b.id, c.id]);
        const filtered = await store.find(query(ws, { updatedSince: at(10), filters: [{ field: 'tier', value: 'smb' }] }));
        expect(filtered).toEqual({ documents: [c], total: 1 });
      });

      it('orders by createdPosition, not by insertion or update', async () => {
        const ws = workspace();
        const third = doc(ws, 30, { fields: { tier: 'SMB' } });
        const first = doc(ws, 10, { fields: { tier: 'SMB' } });
        const second = doc(ws, 20, { fields: { tier: 'SMB' } });
        await putAll(third, first);
        await putAll(second);
        await putAll({ ...first, updatedAt: at(40), revision: 1 });
        const expected = [first.id, second.id, third.id];
        expect(await ids(query(ws))).toEqual(expected);
        expect(await ids(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toEqual(expected);
        expect(await ids(query(ws, { name: 'client 20' }))).toEqual([second.id]);
        expect(await ids(query(ws, { updatedSince: at(0) }))).toEqual(expected);
      });

      it('pages with limit and offset while total counts every match', async () => {
        const ws = workspace();
        const documents = Array.from({ length: 25 }, (_, i) => doc(ws, i + 1, { fields: { even: (i + 1) % 2 === 0 } }));
        await putAll(...[...documents].reverse());
        const page = await store.find(query(ws, { limit: 10, offset: 10 }));
        expect(page.total).toBe(25);
        expect(page.documents).toEqual(documents.slice(10, 20));
        expect(await store.find(query(ws, { limit: 10, offset: 20 }))).toEqual({ documents: documents.slice(20), total: 25 });
        expect(await store.find(query(ws, { limit: 10, offset: 25 }))).toEqual({ documents: [], total: 25 });
        const evens = documents.filter((_, i) => (i + 1) % 2 === 0);
        const filtered = await store.find(query(ws, { filters: [{ field: 'even', value: 'true' }], limit: 5, offset: 5 }));
        expect(filtered).toEqual({ documents: evens.slice(5, 10), total: 12 });
        const since = await store.find(query(ws, { updatedSince: at(5), limit: 3, offset: 1 }));
        expect(since).toEqual({ documents: documents.slice(6, 9), total: 20 });
      });

      it('treats filter values and names as data, not as query syntax', async () => {
        const ws = workspace();
        const tricky = `x' OR '1'='1"; DROP TABLE documents; -- {"$ne": null} %_*`;
        const a = doc(ws, 1, { name: tricky, fields: { note: tricky } });
        const b = doc(ws, 2, { fields: { note: 'plain' } });
        await putAll(a, b);
        expect(await ids(query(ws, { filters: [{ field: 'note', value: filterKey(tricky) }] }))).toEqual([a.id]);
        expect(await ids(query(ws, { name: tricky }))).toEqual([a.id]);
        expect(await ids(query(ws, { filters: [{ field: 'note', value: "' or '1'='1" }] }))).toEqual([]);
        expect(await ids(query(ws, { filters: [{ field: "note' OR 1=1 --", value: 'plain' }] }))).toEqual([]);
        expect((await store.find(query(ws))).total).toBe(2);
      });
    });

    describe('link edges', () => {
      it('remembers every edge once, per workspace, object, field and target, and keeps it after the document goes', async () => {
        const ws = workspace();
        const [invoice, other, lineA, lineB] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        const edge = (id: string, target: string, workspaceId = ws) => ({ workspaceId, object: 'invoiceLines', field: 'invoice', id, target });
        await store.transaction(async (tx) => {
          await tx.addLinks([edge(lineA, invoice), edge(lineB, invoice), edge(lineA, invoice)]);
          await tx.addLinks([]);
        });
        await store.transaction(async (tx) => tx.addLinks([edge(lineA, other), edge(lineB, invoice), edge(lineA, invoice, workspace())]));
        expect((await store.linkSources(ws, 'invoiceLines', 'invoice', invoice)).sort()).toEqual([lineA, lineB].sort());
        expect(await store.linkSources(ws, 'invoiceLines', 'invoice', other)).toEqual([lineA]);
        expect(await store.linkSources(ws, 'invoiceLines', 'other', invoice)).toEqual([]);
        expect(await store.linkSources(ws, 'tasks', 'invoice', invoice)).toEqual([]);
      });

      it('a rolled-back transaction adds no edge; reset drops them', async () => {
        const ws = workspace();
        const target = randomUUID();
        await expect(
          store.transaction(async (tx) => {
            await tx.addLinks([{ workspaceId: ws, object: 'tasks', field: 'playbook', id: randomUUID(), target }]);
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect(await store.linkSources(ws, 'tasks', 'playbook', target)).toEqual([]);
        await store.transaction(async (tx) => tx.addLinks([{ workspaceId: ws, object: 'tasks', field: 'playbook', id: 'kept', target }]));
        await store.reset(projection());
        expect(await store.linkSources(ws, 'tasks', 'playbook', target)).toEqual([]);
      });
    });

    describe('transactions and checkpoints', () => {
      it('commits documents and checkpoint together', async () => {
        const ws = workspace();
        const p = projection();
        const a = doc(ws, 1);
        expect(await store.checkpoint(p)).toBeNull();
        const result = await store.transaction(async (tx) => {
          await tx.put(a);
          await tx.setCheckpoint(p, formatPosition(7n));
          return 'done';
        });
        expect(result).toBe('done');
        expect(await store.get(ws, 'clients', a.id)).toEqual(a);
        expect(await store.checkpoint(p)).toBe(formatPosition(7n));
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(9n)));
        expect(await store.checkpoint(p)).toBe(formatPosition(9n));
      });

      it('concurrent transactions that read a document and write it back all apply (none writes over another)', async () => {
        const ws = workspace();
        const counter = doc(ws, 1, { fields: { count: 0 } });
        await putAll(counter);
        await Promise.all(
          Array.from({ length: 8 }, () =>
            store.transaction(async (tx) => {
              const current = (await tx.get(ws, 'clients', counter.id))!;
              await tx.put({ ...current, fields: { count: (current.fields.count as number) + 1 } });
            }),
          ),
        );
        expect((await store.get(ws, 'clients', counter.id))!.fields.count).toBe(8);
      });

      it('puts many documents at once (a rebuild batch): new ones and replacements, findable by their values', async () => {
        const ws = workspace();
        const a = doc(ws, 1);
        const b = doc(ws, 2);
        await store.transaction((tx) => tx.put(a));
        const replaced = { ...a, fields: { tier: 'Enterprise' }, revision: 1 };
        await store.transaction((tx) => tx.putMany([replaced, b]));
        expect(await store.get(ws, 'clients', a.id)).toEqual(replaced);
        expect(await store.get(ws, 'clients', b.id)).toEqual(b);
        const found = await store.find({ workspaceId: ws, object: 'clients', filters: [{ field: 'tier', value: 'enterprise' }], limit: 10, offset: 0 });
        expect(found.documents.map((d) => d.id)).toEqual([a.id]);
        await store.transaction((tx) => tx.putMany([]));
        expect((await store.find({ workspaceId: ws, object: 'clients', filters: [], limit: 10, offset: 0 })).total).toBe(2);
      });

      it('a throw rolls back documents, deletions and the checkpoint, and rethrows', async () => {
        const ws = workspace();
        const p = projection();
        const kept = doc(ws, 1);
        await store.transaction(async (tx) => {
          await tx.put(kept);
          await tx.setCheckpoint(p, formatPosition(1n));
        });
        const failure = new Error('projection failed');
        await expect(
          store.transaction(async (tx) => {
            await tx.put(doc(ws, 2));
            await tx.put({ ...kept, fields: { changed: true }, revision: 1 });
            await tx.delete(ws, 'clients', kept.id);
            await tx.put(doc(workspace(), 3));
            await tx.setCheckpoint(p, formatPosition(2n));
            throw failure;
          }),
        ).rejects.toBe(failure);
        expect(await store.find(query(ws))).toEqual({ documents: [kept], total: 1 });
        expect(await store.checkpoint(p)).toBe(formatPosition(1n));
        // The store is still usable after a rollback.
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(3n)));
        expect(await store.checkpoint(p)).toBe(formatPosition(3n));
      });

      it('reads outside a transaction see none of its writes until it commits', async () => {
        const ws = workspace();
        const p = projection();
        const a = doc(ws, 1);
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let written!: () => void;
        const wasWritten = new Promise<void>((resolve) => (written = resolve));
        const running = store.transaction(async (tx) => {
          await tx.put(a);
          await tx.setCheckpoint(p, formatPosition(5n));
          written();
          await released;
        });
        await wasWritten;
        expect(await store.get(ws, 'clients', a.id)).toBeNull();
        expect(await store.find(query(ws))).toEqual({ documents: [], total: 0 });
        expect(await store.checkpoint(p)).toBeNull();
        release();
        await running;
        expect(await store.get(ws, 'clients', a.id)).toEqual(a);
        expect(await store.checkpoint(p)).toBe(formatPosition(5n));
      });

      it('inside a transaction, get and findAll see its own writes; findAll returns every match in creation order', async () => {
        const ws = workspace();
        const lines = Array.from({ length: 120 }, (_, i) =>
          doc(ws, 200 - i, { object: 'invoiceLines', fields: { invoice: i % 2 === 0 ? 'inv-a' : 'inv-b', amount: i } }),
        );
        await store.transaction(async (tx) => {
          for (const line of lines) await tx.put(line);
          expect(await tx.get(ws, 'invoiceLines', lines[0]!.id)).toEqual(lines[0]);
          const all = await tx.findAll(ws, 'invoiceLines', [{ field: 'invoice', value: 'inv-a' }]);
          expect(all.map((line) => line.id)).toEqual(
            lines
              .filter((_, i) => i % 2 === 0)
              .reverse()
              .map((line) => line.id),
          );
          expect(await tx.findAll(ws, 'invoiceLines', [])).toHaveLength(120);
          expect(await tx.findAll(ws, 'invoiceLines', [{ field: 'invoice', value: 'inv-a' }, { field: 'amount', value: '4' }])).toEqual([lines[4]]);
          await tx.delete(ws, 'invoiceLines', lines[4]!.id);
          expect(await tx.get(ws, 'invoiceLines', lines[4]!.id)).toBeNull();
          expect(await tx.findAll(ws, 'invoiceLines', [{ field: 'amount', value: '4' }])).toEqual([]);
          expect(await tx.findAll(workspace(), 'invoiceLines', [])).toEqual([]);
        });
      });

      it('tx.checkpoint reads the checkpoint, including one set earlier in the same transaction', async () => {
        const p = projection();
        await store.transaction(async (tx) => {
          expect(await tx.checkpoint(p)).toBeNull();
          await tx.setCheckpoint(p, formatPosition(11n));
          expect(await tx.checkpoint(p)).toBe(formatPosition(11n));
        });
      });

      it('waitForCheckpoint resolves true at once when reached, and when a later commit reaches it', async () => {
        const p = projection();
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(10n)));
        expect(await store.waitForCheckpoint(p, formatPosition(10n), 1000)).toBe(true);
        expect(await store.waitForCheckpoint(p, formatPosition(3n), 0)).toBe(true);

        // Their own timeouts a minute away: only the commits can wake them in time, each within a
        // second of the commit that reaches it (not counting how long the commits themselves take).
        const waiting = store.waitForCheckpoint(p, formatPosition(12n), 60_000);
        const alsoWaiting = store.waitForCheckpoint(p, formatPosition(20n), 60_000);
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(11n)));
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(15n)));
        expect(await beforeTimer(waiting, 1000)).toBe(true);
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(25n)));
        expect(await beforeTimer(alsoWaiting, 1000)).toBe(true);
      });

      it('waitForCheckpoint resolves false after the timeout when the position is not reached', async () => {
        const p = projection();
        const other = projection();
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(4n)));
        const started = performance.now();
        const waiting = store.waitForCheckpoint(p, formatPosition(5n), 100);
        await store.transaction((tx) => tx.setCheckpoint(other, formatPosition(50n)));
        expect(await waiting).toBe(false);
        expect(performance.now() - started).toBeGreaterThanOrEqual(90);
        expect(await store.waitForCheckpoint(projection(), formatPosition(1n), 30)).toBe(false);
      });

      it('waitForCheckpoint ignores a rolled-back checkpoint', async () => {
        const p = projection();
        const waiting = store.waitForCheckpoint(p, formatPosition(2n), 150);
        await expect(
          store.transaction(async (tx) => {
            await tx.setCheckpoint(p, formatPosition(2n));
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect(await waiting).toBe(false);
      });

      it('reset drops the documents and the projection checkpoint', async () => {
        const ws = workspace();
        const p = projection();
        const other = projection();
        const a = doc(ws, 1, { fields: { tier: 'SMB' } });
        await store.transaction(async (tx) => {
          await tx.put(a);
          await tx.setCheckpoint(p, formatPosition(8n));
          await tx.setCheckpoint(other, formatPosition(8n));
        });
        await store.reset(p);
        expect(await store.get(ws, 'clients', a.id)).toBeNull();
        expect(await store.find(query(ws))).toEqual({ documents: [], total: 0 });
        expect(await store.find(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toEqual({ documents: [], total: 0 });
        expect(await store.checkpoint(p)).toBeNull();
        expect(await store.checkpoint(other)).toBe(formatPosition(8n));
        // Rebuilding writes the same documents again.
        await putAll(a);
        expect(await store.find(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toEqual({ documents: [a], total: 1 });
      });
    });

    describe('generations (blue/green rebuilds)', () => {
      const owner = `test:${process.pid}`;
      const dead = () => false;

      it('builds a generation beside the live one, invisible to reads until promoted, then drops the old one', async () => {
        const ws = workspace();
        const p = projection();
        const before = await store.generations();
        const kept = doc(ws, 1, { fields: { tier: 'SMB' } });
        await store.transaction(async (tx) => {
          await tx.put(kept);
          await tx.setCheckpoint(p, formatPosition(10n));
        });
        const building = await store.beginGeneration({ version: 'v2', owner, restart: false, ownerAlive: dead });
        expect(building.resumed).toBe(false);
        expect(building.generation).toBeGreaterThan(before.live);
        expect(building.position).toBeNull();

        const rebuilt = doc(ws, 2, { fields: { tier: 'Enterprise' } });
        await store.transaction(
          async (tx) => {
            expect(await tx.checkpoint(p)).toBeNull();
            await tx.put(rebuilt);
            await tx.setCheckpoint(p, formatPosition(7n));
          },
          { generation: building.generation },
        );
        // Reads and the live checkpoint still come from the live generation.
        expect(await store.get(ws, 'clients', rebuilt.id)).toBeNull();
        expect(await store.get(ws, 'clients', kept.id)).toEqual(kept);
        expect(await store.checkpoint(p)).toBe(formatPosition(10n));
        expect((await store.generations()).building).toMatchObject({ generation: building.generation, version: 'v2', position: formatPosition(7n), owner });

        const calls: [string | null, string][] = [];
        await store.promoteGeneration(building.generation, p, async (tx, from, to) => {
          calls.push([from, to]);
          await tx.put({ ...rebuilt, fields: { tier: 'SMB' }, revision: 1 });
          await tx.setCheckpoint(p, to);
        });
        expect(calls).toEqual([[formatPosition(7n), formatPosition(10n)]]);
        const after = await store.generations();
        expect(after).toEqual({ live: building.generation, liveVersion: 'v2', building: null });
        expect(await store.get(ws, 'clients', kept.id)).toBeNull();
        expect(await store.get(ws, 'clients', rebuilt.id)).toMatchObject({ fields: { tier: 'SMB' }, revision: 1 });
        expect(await store.find(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toMatchObject({ total: 1 });
        expect(await store.getMany(ws, 'clients', [kept.id, rebuilt.id])).toHaveLength(1);
        expect(await store.checkpoint(p)).toBe(formatPosition(10n));
        // The live projector writes to the new generation from now on.
        await store.transaction((tx) => tx.put(kept));
        expect(await store.get(ws, 'clients', kept.id)).toEqual(kept);

        expect(await store.dropUnusedGenerations()).toBeGreaterThanOrEqual(1);
        expect(await store.dropUnusedGenerations()).toBe(0);
        expect(await store.get(ws, 'clients', kept.id)).toEqual(kept);
      });

      it('a generation built in batches (replaced and deleted documents among them) lists, filters, counts and sorts like the live one once promoted', async () => {
        const ws = workspace();
        const p = projection();
        const building = await store.beginGeneration({ version: 'v-bulk', owner, restart: false, ownerAlive: dead });
        const a = doc(ws, 1, { fields: { tier: 'SMB', tags: ['x', 'Y'] }, calculated: { score: 3 } });
        const b = doc(ws, 2, { fields: { tier: 'SMB' }, name: 'Beta' });
        const c = doc(ws, 3, { fields: { tier: 'Enterprise' }, name: 'Alpha' });
        const gone = doc(ws, 4, { fields: { tier: 'SMB' } });
        const inGeneration = { generation: building.generation };
        await store.transaction((tx) => tx.putMany([a, b, c, gone]), inGeneration);
        const b2 = { ...b, fields: { tier: 'Enterprise' }, updatedAt: at(9), revision: 1 };
        await store.transaction(async (tx) => {
          await tx.put(b2);
          await tx.delete(ws, 'clients', gone.id);
          await tx.setCheckpoint(p, formatPosition(9n));
        }, inGeneration);
        // A projection that finds by value while the generation is being built sees every batch before.
        await store.transaction(async (tx) => {
          expect((await tx.findAll(ws, 'clients', [{ field: 'tier', value: 'enterprise' }])).map((d) => d.id).sort()).toEqual([b.id, c.id].sort());
        }, inGeneration);
        await store.transaction((tx) => tx.put({ ...c, fields: { tier: 'SMB' }, revision: 1 }), inGeneration);
        await store.promoteGeneration(building.generation, p, async () => {});

        expect(await store.find(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toMatchObject({ total: 2 });
        expect(await ids(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toEqual([a.id, c.id]);
        expect(await ids(query(ws, { filters: [{ field: 'tier', value: 'enterprise' }] }))).toEqual([b.id]);
        expect(await ids(query(ws, { filters: [{ field: 'tags', value: 'y' }, { field: 'score', value: '3' }] }))).toEqual([a.id]);
        expect(await store.find(query(ws))).toMatchObject({ total: 3 });
        expect(await ids(query(ws, { updatedSince: at(5) }))).toEqual([b.id]);
        expect(await ids(query(ws, { name: 'alpha' }))).toEqual([c.id]);
        expect(await store.get(ws, 'clients', gone.id)).toBeNull();
        await store.dropUnusedGenerations();
      });

      it('a generation batch that looks records up before writing them (absent, present, deleted then written again) keeps each once, as last written', async () => {
        const ws = workspace();
        const p = projection();
        const building = await store.beginGeneration({ version: 'v-lookups', owner, restart: false, ownerAlive: dead });
        const inGeneration = { generation: building.generation };
        const a = doc(ws, 1, { fields: { tier: 'SMB' }, name: 'A' });
        const b = doc(ws, 2, { fields: { tier: 'SMB' }, name: 'B' });
        const c = doc(ws, 3, { fields: { tier: 'SMB' }, name: 'C' });
        await store.transaction((tx) => tx.put(a), inGeneration);
        await store.transaction(async (tx) => {
          expect(await tx.get(ws, 'clients', b.id)).toBeNull();
          await tx.put(b);
          expect(await tx.get(ws, 'clients', c.id)).toBeNull();
          await tx.put(c);
          // Written twice in the batch, after the look-up that found nothing.
          await tx.put({ ...c, fields: { tier: 'Enterprise' }, revision: 1 });
          expect(await tx.get(ws, 'clients', a.id)).toMatchObject({ id: a.id });
          await tx.delete(ws, 'clients', a.id);
          await tx.put({ ...a, name: 'A2', revision: 1 });
          await tx.setCheckpoint(p, formatPosition(3n));
        }, inGeneration);
        await store.promoteGeneration(building.generation, p, async () => {});
        expect(await store.find(query(ws))).toMatchObject({ total: 3 });
        expect(await ids(query(ws, { filters: [{ field: 'tier', value: 'smb' }] }))).toEqual([a.id, b.id]);
        expect(await ids(query(ws, { filters: [{ field: 'tier', value: 'enterprise' }] }))).toEqual([c.id]);
        expect(await store.get(ws, 'clients', a.id)).toMatchObject({ name: 'A2', revision: 1 });
        expect(await store.get(ws, 'clients', c.id)).toMatchObject({ fields: { tier: 'Enterprise' }, revision: 1 });
        await store.dropUnusedGenerations();
      });

      it('resumes the generation being built, restarts it on request, and refuses a second live builder', async () => {
        const p = projection();
        const first = await store.beginGeneration({ version: 'v3', owner, restart: false, ownerAlive: dead });
        await store.transaction((tx) => tx.setCheckpoint(p, formatPosition(5n)), { generation: first.generation });
        const resumed = await store.beginGeneration({ version: 'v3', owner: 'other:1', restart: false, ownerAlive: dead });
        expect(resumed).toMatchObject({ generation: first.generation, position: formatPosition(5n), resumed: true, owner: 'other:1' });
        await expect(store.beginGeneration({ version: 'v3', owner, restart: false, ownerAlive: () => true })).rejects.toThrow(/already running/);
        const restarted = await store.beginGeneration({ version: 'v3', owner, restart: true, ownerAlive: dead });
        expect(restarted.generation).not.toBe(first.generation);
        expect(restarted).toMatchObject({ position: null, resumed: false });
        // The superseded generation takes no more writes.
        await expect(store.transaction((tx) => tx.setCheckpoint(p, formatPosition(6n)), { generation: first.generation })).rejects.toThrow(
          /stopped or restarted/,
        );
        await store.promoteGeneration(restarted.generation, p, async () => {});
        expect((await store.generations()).liveVersion).toBe('v3');
        await store.setLiveVersion('v4');
        expect((await store.generations()).liveVersion).toBe('v4');
        await store.dropUnusedGenerations();
      });
    });

    it('keeps the last status of each projection runner', async () => {
      const name = projection();
      const status = { name, eventsPerSecond: 12.5, lastError: null, lastErrorAt: null, failing: false, updatedAt: at(1) };
      await store.saveRunnerStatus(status);
      await store.saveRunnerStatus({ ...status, lastError: 'boom', lastErrorAt: at(2), failing: true, updatedAt: at(2) });
      const found = (await store.runnerStatuses()).filter((s) => s.name === name);
      expect(found).toEqual([{ ...status, lastError: 'boom', lastErrorAt: at(2), failing: true, updatedAt: at(2) }]);
    });
  });
}

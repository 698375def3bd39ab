import { describe, expect, it } from 'vitest';
import { ValidationFailed } from '../../src/core/errors.js';
import { formatPosition } from '../../src/eventstore/position.js';
import {
  RECORD_INDEXES,
  RECORD_SORT,
  filterEntries,
  filterEntry,
  fromMongoRecord,
  epochMs,
  recordKey,
  toMongoFilter,
  toMongoRecord,
  toBulkReplacements,
  toPaging,
  toStoredRecord,
} from '../../src/readstore/mongodb/mapping.js';
import type { RecordDocument } from '../../src/readstore/port.js';
import { explainTransactionError } from '../../src/readstore/mongodb/index.js';

const document: RecordDocument = {
  workspaceId: 'w1',
  object: 'clients',
  id: 'r1',
  name: 'Acme Inc',
  fields: { name: 'Acme Inc', status: 'Active', tags: ['Gold', 'EMEA'], seats: 12, vip: true, notes: null },
  calculated: { openBalance: 150.5, health: 'Good' },
  createdAt: '2025-01-02T03:04:05.678Z',
  updatedAt: '2025-01-03T03:04:05.678Z',
  createdPosition: formatPosition(100n, 100n),
  revision: 2,
};

describe('bulk replacements (a rebuild batch)', () => {
  it('makes one upserting replaceOne per document, keyed and mapped as put does', () => {
    const a = { workspaceId: 'w', object: 'clients', id: 'a', name: 'A', fields: { tier: 'SMB' }, calculated: {}, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z', createdPosition: '1', revision: 2 };
    const b = { ...a, id: 'b', name: null };
    expect(toBulkReplacements([a, b])).toEqual([
      { replaceOne: { filter: { _id: toMongoRecord(a)._id }, replacement: toMongoRecord(a), upsert: true } },
      { replaceOne: { filter: { _id: toMongoRecord(b)._id }, replacement: toMongoRecord(b), upsert: true } },
    ]);
    expect(toBulkReplacements([])).toEqual([]);
  });
});

describe('record documents', () => {
  it('round-trip through the stored shape unchanged', () => {
    expect(fromMongoRecord(toMongoRecord(document))).toEqual(document);
    const unnamed = { ...document, name: null };
    expect(fromMongoRecord(toMongoRecord(unnamed))).toEqual(unnamed);
  });

  it('keep the stored rendering as written, and read one written before renderings as none', () => {
    const rendered = { ...document, rendered: 'shape\u0001{"id":"r1","owner":\u0001pu1\u0001}' };
    expect(toMongoRecord(rendered).rendered).toBe(rendered.rendered);
    expect(fromMongoRecord(toMongoRecord(rendered))).toEqual(rendered);
    expect(toMongoRecord(document).rendered).toBeNull();
    const { rendered: _absent, ...older } = toMongoRecord(document);
    expect(fromMongoRecord(older).rendered).toBeUndefined();
    expect(toStoredRecord(fromMongoRecord(older)).rendered).toBeNull();
    const stored = toStoredRecord(fromMongoRecord(toMongoRecord(rendered)));
    expect(stored.id).toBe('r1');
    expect(stored.rendered).toBe(rendered.rendered);
    expect(stored.document?.()).toEqual(rendered);
  });

  it('carry an unambiguous _id and the normalised name', () => {
    const stored = toMongoRecord(document);
    expect(stored._id).toBe(recordKey('w1', 'clients', 'r1'));
    expect(recordKey('a', 'b|c', 'd')).not.toBe(recordKey('a|b', 'c', 'd'));
    expect(stored.nameKey).toBe('acme inc');
    expect(toMongoRecord({ ...document, name: null }).nameKey).toBeNull();
  });

  it('index every field and calculated value as (field, normalised value) entries', () => {
    const entries = toMongoRecord(document).filterKeys;
    expect(entries).toEqual(
      expect.arrayContaining([
        filterEntry('status', 'active'),
        filterEntry('tags', 'gold'),
        filterEntry('tags', 'emea'),
        filterEntry('seats', '12'),
        filterEntry('vip', 'true'),
        filterEntry('openBalance', '150.5'),
        filterEntry('health', 'good'),
      ]),
    );
    // null values cannot be filtered on; no duplicates.
    expect(entries.some((entry) => entry.startsWith('["notes"'))).toBe(false);
    expect(new Set(entries).size).toBe(entries.length);
  });

  it('entries cannot be confused across field and value boundaries', () => {
    expect(filterEntry('a=b', 'c')).not.toBe(filterEntry('a', 'b=c'));
    expect(filterEntry('a","b', 'c')).not.toBe(filterEntry('a', 'b","c'));
    expect(filterEntries({ x: 'A' }, { x: 'a' })).toEqual([filterEntry('x', 'a')]);
  });
});

describe('find queries', () => {
  const base = { workspaceId: 'w1', object: 'clients', filters: [] };

  it('always scope by workspace and object', () => {
    expect(toMongoFilter(base)).toEqual({ workspaceId: 'w1', object: 'clients' });
  });

  it('one filter is an equality on the multikey entries (index bound)', () => {
    expect(toMongoFilter({ ...base, filters: [{ field: 'status', value: 'active' }] })).toEqual({
      workspaceId: 'w1',
      object: 'clients',
      filterKeys: filterEntry('status', 'active'),
    });
  });

  it('several filters must all match; duplicates collapse', () => {
    const filter = toMongoFilter({
      ...base,
      filters: [
        { field: 'status', value: 'active' },
        { field: 'tags', value: 'gold' },
        { field: 'status', value: 'active' },
      ],
    });
    expect(filter).toEqual({
      workspaceId: 'w1',
      object: 'clients',
      filterKeys: { $all: [filterEntry('status', 'active'), filterEntry('tags', 'gold')] },
    });
  });

  it('values are compared in their normalised form (case-insensitive, exact)', () => {
    const filter = toMongoFilter({ ...base, filters: [{ field: 'status', value: 'ACTIVE' }], name: 'ACME Inc' });
    expect(filter.filterKeys).toBe(filterEntry('status', 'active'));
    expect(filter.nameKey).toBe('acme inc');
  });

  it('user input never becomes an operator or a regex', () => {
    const hostile = ['.*', '^a', '{"$ne":null}', '$where', 'a\\', '"]', '(?i)x'];
    for (const value of hostile) {
      const filter = toMongoFilter({ ...base, filters: [{ field: 'status', value }], name: value });
      expect(filter.filterKeys).toBe(filterEntry('status', value.toLowerCase()));
      expect(typeof filter.filterKeys).toBe('string');
      expect(filter.nameKey).toBe(value.toLowerCase());
      expect(JSON.stringify(filter)).not.toContain('$regex');
    }
    const field = toMongoFilter({ ...base, filters: [{ field: '$where', value: 'x' }] });
    expect(Object.keys(field)).toEqual(['workspaceId', 'object', 'filterKeys']);
  });

  it('updatedSince is strict and compares moments, not spellings', () => {
    const ms = Date.parse('2025-01-02T03:04:05.678Z');
    expect(toMongoFilter({ ...base, updatedSince: '2025-01-02T03:04:05.678Z' }).updatedMs).toEqual({ $gt: ms });
    expect(toMongoFilter({ ...base, updatedSince: '2025-01-02T05:04:05.678+02:00' }).updatedMs).toEqual({ $gt: ms });
    expect(toMongoFilter({ ...base, updatedSince: '2025-01-02T03:04:05Z' }).updatedMs).toEqual({ $gt: ms - 678 });
    expect(toMongoRecord(document).updatedMs).toBe(Date.parse(document.updatedAt));
  });

  it('rejects moments that are not ISO 8601 date-times', () => {
    expect(() => toMongoFilter({ ...base, updatedSince: 'not a date' })).toThrow(ValidationFailed);
    expect(() => toMongoRecord({ ...document, updatedAt: 'yesterday' })).toThrow(ValidationFailed);
    expect(epochMs('1970-01-01T00:00:00.001Z', 'x')).toBe(1);
  });

  it('orders by creation position, then id', () => {
    expect(Object.entries(RECORD_SORT)).toEqual([
      ['createdPosition', 1],
      ['id', 1],
    ]);
  });

  it('maps offset/limit to skip/limit, and limit 0 to "read nothing" (MongoDB would read all)', () => {
    expect(toPaging({ offset: 0, limit: 50 })).toEqual({ skip: 0, limit: 50 });
    expect(toPaging({ offset: 100, limit: 10 })).toEqual({ skip: 100, limit: 10 });
    expect(toPaging({ offset: -5, limit: 10 })).toEqual({ skip: 0, limit: 10 });
    expect(toPaging({ offset: 0, limit: 0 })).toBeNull();
  });
});

describe('indexes', () => {
  const keys = RECORD_INDEXES.map((index) => Object.keys(index.key));

  it('serve creation order, updatedAt, name and field filters within workspace and object', () => {
    expect(keys).toContainEqual(['workspaceId', 'object', 'createdPosition', 'id']);
    expect(keys).toContainEqual(['workspaceId', 'object', 'updatedMs']);
    expect(keys).toContainEqual(['workspaceId', 'object', 'nameKey', 'createdPosition', 'id']);
    expect(keys).toContainEqual(['workspaceId', 'object', 'filterKeys', 'createdPosition', 'id']);
  });

  it('have names (so that createIndexes is idempotent across processes)', () => {
    expect(RECORD_INDEXES.every((index) => typeof index.name === 'string')).toBe(true);
  });

  it('every equality query is an index prefix followed by exactly the sort keys (no in-memory sort)', () => {
    const sort = Object.keys(RECORD_SORT);
    for (const field of [[], ['nameKey'], ['filterKeys']]) {
      expect(keys).toContainEqual(['workspaceId', 'object', ...field, ...sort]);
    }
  });
});

describe('transaction errors', () => {
  it('explain that a replica set is required', () => {
    const error = explainTransactionError(new Error('Transaction numbers are only allowed on a replica set member or mongos'));
    expect(String((error as Error).message)).toMatch(/replica set/);
    expect(String((error as Error).message)).toMatch(/rs\.initiate/);
    const other = new Error('boom');
    expect(explainTransactionError(other)).toBe(other);
  });
});

describe('records of workspace-defined objects and fields (issue 25)', () => {
  it('map like default ones: a new object or field needs no index or migration', () => {
    const custom: RecordDocument = {
      ...document,
      object: 'onboardingProjects',
      name: 'Globex rollout',
      fields: { name: 'Globex rollout', phase: 'Build', contacts: ['c1', 'c2'], budget: 1200 },
      calculated: {},
    };
    const stored = toMongoRecord(custom);
    expect(fromMongoRecord(stored)).toEqual(custom);
    expect(stored.filterKeys).toEqual(expect.arrayContaining([filterEntry('phase', 'build'), filterEntry('contacts', 'c2'), filterEntry('budget', '1200')]));
    const filter = toMongoFilter({ workspaceId: 'w1', object: 'onboardingProjects', filters: [{ field: 'phase', value: 'build' }] });
    expect(filter).toMatchObject({ workspaceId: 'w1', object: 'onboardingProjects' });
    expect(JSON.stringify(filter)).toContain(JSON.stringify(filterEntry('phase', 'build')));
    // The indexes are on (workspaceId, object, ...) and the generic entries: none names an object or a field.
    expect(JSON.stringify(RECORD_INDEXES)).not.toMatch(/clients|phase/);
  });
});

describe('link edges', () => {
  it('key an edge by all its parts, so that adding it again replaces it with itself', async () => {
    const { toMongoLinkEdge, LINK_EDGE_INDEXES } = await import('../../src/readstore/mongodb/mapping.js');
    const edge = { workspaceId: 'w', object: 'invoiceLines', field: 'invoice', id: 'l1', target: 'b1' };
    expect(toMongoLinkEdge(edge)).toEqual({ _id: '["w","b1","invoiceLines","invoice","l1"]', ...edge });
    expect(toMongoLinkEdge({ ...edge, id: 'l2' })._id).not.toBe(toMongoLinkEdge(edge)._id);
    expect(Object.keys(LINK_EDGE_INDEXES[0]!.key)[0]).toBe('workspaceId');
  });
});

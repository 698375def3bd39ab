import { describe, expect, it } from 'vitest';
import { cellValue } from '../../commands/import/cells.js';
import { mapColumns } from '../../commands/import/columns.js';
import { defaultObject } from '../../src/schema/catalogue.js';
import type { FieldDef } from '../../src/schema/types.js';

const clients = defaultObject('clients')!;
const field = (type: FieldDef['format']['type']): FieldDef => ({ key: 'f', label: 'F', required: false, format: { type } as FieldDef['format'] });

describe('CSV cells (given a field format, when a cell, then the REST input value)', () => {
  it.each<[FieldDef['format']['type'], string, unknown]>([
    ['boolean', 'Yes', true],
    ['boolean', 'no', false],
    ['boolean', '1', true],
    ['boolean', '0', false],
    ['boolean', 'TRUE', true],
    ['boolean', 'maybe', 'maybe'],
    ['number', ' 1234.5 ', 1234.5],
    ['number', 'lots', 'lots'],
    ['text', '  padded ', 'padded'],
    ['text', '   ', undefined],
    ['date', '2027-01-31', '2027-01-31'],
  ])('%s %j -> %j', (type, cell, expected) => {
    expect(cellValue(field(type), cell)).toEqual(expected);
  });

  it('splits link lists on ;', () => {
    expect(cellValue({ ...field('linkList'), format: { type: 'linkList', object: 'contacts' } }, 'Sam Smith; Kim Lee;')).toEqual(['Sam Smith', 'Kim Lee']);
  });
});

describe('CSV header', () => {
  it('maps keys and labels, ignoring case and spaces, and id', () => {
    const columns = mapColumns(clients, ['id', 'name', 'Renewal Date', 'account owner', 'ARR']);
    expect(columns.map((column) => (column.kind === 'id' ? 'id' : column.field.key))).toEqual(['id', 'name', 'renewalDate', 'owner', 'arr']);
  });

  it.each([
    [['name', 'colour'], 'column "colour" is not a field of clients'],
    [['name', 'Name'], 'name twice'],
    [['name', 'healthScore'], 'read only'],
    [['name', 'openBalance'], 'read only'],
    [['name', 'documents'], 'files field'],
    [['name', ''], 'empty column name'],
  ])('refuses %j', (header, message) => {
    expect(() => mapColumns(clients, header)).toThrow(message);
  });
});

import { describe, expect, it } from 'vitest';
import { NotFound, ValidationFailed } from '../../src/core/errors.js';
import { buildCatalogue } from '../../src/schema/catalogue.js';
import { decideSchema, parseFormatInput, type SchemaCommand } from '../../src/schema/schemaDecider.js';
import { EMPTY_SCHEMA, evolve, type SchemaEvent, type SchemaState } from '../../src/schema/schemaEvents.js';

/** Schema changes: given the events so far, when a command, then events or a typed error. */

const given = (...events: SchemaEvent[]): SchemaState => events.reduce((state, event, i) => evolve(state, event, i), EMPTY_SCHEMA);
const when = (state: SchemaState, command: SchemaCommand) => decideSchema(command, state, buildCatalogue('w1', state));

const projects: SchemaEvent[] = [
  { type: 'ObjectCreated', data: { key: 'projects', label: 'Projects', nameField: 'name' } },
  { type: 'FieldAdded', data: { object: 'projects', field: { key: 'name', label: 'Name', required: true, format: { type: 'text' } } } },
];
const phase: SchemaEvent = {
  type: 'FieldAdded',
  data: { object: 'projects', field: { key: 'phase', label: 'Phase', required: false, format: { type: 'oneOf', values: ['Plan', 'Live'] } } },
};
const addField = (object: string, key: string, format: SchemaCommand & { type: 'AddField' } extends { format: infer F } ? F : never = { type: 'text' }): SchemaCommand => ({
  type: 'AddField',
  object,
  key,
  format,
  required: false,
  personal: false,
});

describe('decideSchema', () => {
  it.each<[string, SchemaEvent[], SchemaCommand, SchemaEvent[]]>([
    ['creating an object also makes its record-name field', [], { type: 'CreateObject', key: 'projects', label: 'Projects' }, projects],
    [
      'a personal field on a default object',
      [],
      { ...addField('contacts', 'nickname'), personal: true } as SchemaCommand,
      [{ type: 'FieldAdded', data: { object: 'contacts', field: { key: 'nickname', label: 'Nickname', required: false, format: { type: 'text' }, personal: true } } }],
    ],
    ['a value added to a one-of list', [...projects, phase], { type: 'AddFieldOption', object: 'projects', key: 'phase', value: 'Hold' }, [{ type: 'FieldOptionAdded', data: { object: 'projects', key: 'phase', value: 'Hold' } }]],
    ['deactivating twice is one event', [...projects, phase, { type: 'FieldDeactivated', data: { object: 'projects', key: 'phase' } }], { type: 'DeactivateField', object: 'projects', key: 'phase' }, []],
    ['reactivating', [...projects, phase, { type: 'FieldDeactivated', data: { object: 'projects', key: 'phase' } }], { type: 'ReactivateField', object: 'projects', key: 'phase' }, [{ type: 'FieldReactivated', data: { object: 'projects', key: 'phase' } }]],
  ])('%s', (_, history, command, expected) => {
    expect(when(given(...history), command)).toEqual(expected);
  });

  it.each<[string, SchemaEvent[], SchemaCommand, typeof ValidationFailed | typeof NotFound, RegExp]>([
    ['an object key of a default object', [], { type: 'CreateObject', key: 'clients', label: 'x' }, ValidationFailed, /taken by a default object/],
    ['an object key taken by another', projects, { type: 'CreateObject', key: 'projects', label: 'x' }, ValidationFailed, /workspace-defined/],
    ['a key against the rule', [], addField('clients', '9lives'), ValidationFailed, /lowercase letter/],
    ['a key with a dash', [], addField('clients', 'a-b'), ValidationFailed, /lowercase letter/],
    ['a default key', [], addField('clients', 'arr'), ValidationFailed, /default field "arr"/],
    ['a reserved name', [], addField('clients', 'id'), ValidationFailed, /reserved/],
    ['a key used by a deactivated field', [...projects, phase, { type: 'FieldDeactivated', data: { object: 'projects', key: 'phase' } }], addField('projects', 'phase', { type: 'number' }), ValidationFailed, /not reused/],
    ['an unknown object', [], addField('partners', 'x'), NotFound, /unknown object/],
    ['a second auto number', [], addField('clients', 'code', { type: 'autoNumber', prefix: 'X-' }), ValidationFailed, /already has an auto number/],
    ['a default field deactivated', [], { type: 'DeactivateField', object: 'clients', key: 'tier' }, NotFound, /default fields cannot be changed/],
    ['the record name deactivated', projects, { type: 'DeactivateField', object: 'projects', key: 'name' }, ValidationFailed, /record name/],
    ['an option twice', [...projects, phase], { type: 'AddFieldOption', object: 'projects', key: 'phase', value: 'plan' }, ValidationFailed, /already has the option/],
  ])('refuses %s', (_, history, command, error, message) => {
    expect(() => when(given(...history), command)).toThrow(error);
    expect(() => when(given(...history), command)).toThrow(message);
  });
});

describe('parseFormatInput', () => {
  const catalogue = buildCatalogue('w1', given(...projects));
  it.each([
    [{ format: 'Number (USD)' }, { type: 'number', currency: 'USD' }],
    [{ format: 'Date and time' }, { type: 'dateTime' }],
    [{ format: 'web address' }, { type: 'url' }],
    [{ format: 'oneOf', options: ['A', ' B '] }, { type: 'oneOf', values: ['A', 'B'] }],
    [{ format: 'Link list', linkTo: 'projects' }, { type: 'linkList', object: 'projects' }],
    [{ format: 'autoNumber', prefix: 'PR-' }, { type: 'autoNumber', prefix: 'PR-' }],
  ])('reads %j', (input, format) => {
    expect(parseFormatInput(input, catalogue)).toEqual(format);
  });

  it.each([
    [{ format: 'Calculated' }, /unknown format/],
    [{ format: 'Files' }, /unknown format/],
    [{ format: 'text', options: ['A'] }, /--options applies only to oneOf/],
    [{ format: 'oneOf' }, /at least one value/],
    [{ format: 'link' }, /needs --link-to/],
    [{ format: 'link', linkTo: 'nowhere' }, /unknown object "nowhere"/],
    [{ format: 'autoNumber' }, /needs --prefix/],
    [{ format: 'text', prefix: 'X' }, /--prefix applies only/],
  ])('refuses %j', (input, message) => {
    expect(() => parseFormatInput(input, catalogue)).toThrow(message);
  });
});

describe('evolve and the catalogue', () => {
  it('replays to the schema of every moment: a label, an option, a deactivation', () => {
    const history: SchemaEvent[] = [
      ...projects,
      phase,
      { type: 'FieldLabelChanged', data: { object: 'projects', key: 'phase', label: 'Stage' } },
      { type: 'FieldOptionAdded', data: { object: 'projects', key: 'phase', value: 'Hold' } },
      { type: 'FieldDeactivated', data: { object: 'projects', key: 'phase' } },
    ];
    const at = (n: number) => buildCatalogue('w1', given(...history.slice(0, n))).object('projects');
    expect(at(3)!.fields.map((field) => [field.key, field.label])).toEqual([['name', 'Name'], ['phase', 'Phase']]);
    expect(at(5)!.fields[1]).toMatchObject({ label: 'Stage', format: { values: ['Plan', 'Live', 'Hold'] }, custom: true });
    expect(at(6)!.fields.map((field) => field.key)).toEqual(['name']);
    expect(at(6)!.inactiveFields!.map((field) => field.key)).toEqual(['phase']);
    expect(at(6)).toMatchObject({ custom: true, nameFields: ['name'], matchByName: true });
    expect(Object.isFrozen(at(6)!.fields)).toBe(true);
  });

  it('other events of the workspace stream only move the revision', () => {
    expect(evolve(EMPTY_SCHEMA, { type: 'ApiKeyCreated', data: {} }, 4)).toEqual({ ...EMPTY_SCHEMA, revision: 4 });
  });
});

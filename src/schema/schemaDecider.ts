import { NotFound, ValidationFailed } from '../core/errors.js';
import type { Catalogue } from './catalogue.js';
import { FORMATS } from './formats.js';
import type { CustomField, SchemaEvent, SchemaState } from './schemaEvents.js';
import type { FieldDef, FieldFormat } from './types.js';

/**
 * Schema changes (`csr objects create`, `csr fields ...`) decided against the workspace's
 * schema and catalogue as they are: pure, throws a typed error for bad input, else the events.
 */

export const KEY_RULE = /^[a-z][a-zA-Z0-9]{0,39}$/;
/** Names the API uses beside field keys (record members, list and upsert query parameters). */
/** Paths of the API beside the objects' own: an object with such a key could never be reached. */
const RESERVED_OBJECT_KEYS: ReadonlyMap<string, string> = new Map([['events', 'GET /api/v1/events is the change feed']]);
const RESERVED_FIELD_KEYS = new Set(['id', 'createdAt', 'updatedAt', 'limit', 'offset', 'match', 'records']);
const MAX_FIELDS = 200;
const MAX_OPTION = 100;

export type SchemaCommand =
  | { type: 'CreateObject'; key: string; label: string; nameField?: string; nameLabel?: string }
  | { type: 'AddField'; object: string; key: string; label?: string; format: FieldFormat; required: boolean; personal: boolean }
  | { type: 'ChangeFieldLabel'; object: string; key: string; label: string }
  | { type: 'AddFieldOption'; object: string; key: string; value: string }
  | { type: 'DeactivateField'; object: string; key: string }
  | { type: 'ReactivateField'; object: string; key: string };

/** What `csr fields add` is told, turned into a format (or a clear error). */
export interface FormatInput {
  format: string;
  options?: string[];
  linkTo?: string;
  prefix?: string;
}

const normalise = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, '');
const ALIASES: Record<string, string> = { numberusd: 'usd', usd: 'usd', webaddress: 'url', emailaddress: 'email', dateandtime: 'dateTime' };

/** Every name `--format` accepts: the table's own and spec 2.2's labels, in any case and spacing. */
export function definableFormats(): string[] {
  return [...Object.values(FORMATS).flatMap((row) => (row.cli ? [row.cli] : [])), 'usd'];
}

export function parseFormatInput(input: FormatInput, catalogue: Catalogue): FieldFormat {
  const wanted = normalise(input.format);
  const type =
    ALIASES[wanted] ??
    Object.entries(FORMATS).find(([, row]) => row.cli !== null && (normalise(row.cli) === wanted || normalise(row.label) === wanted))?.[0];
  if (!type) throw new ValidationFailed(`unknown format "${input.format}"; use one of: ${definableFormats().join(', ')}`);
  const refuse = (option: string, only: string) => new ValidationFailed(`--${option} applies only to ${only} fields`);
  if (input.options !== undefined && type !== 'oneOf') throw refuse('options', 'oneOf');
  if (input.linkTo !== undefined && type !== 'link' && type !== 'linkList') throw refuse('link-to', 'link and linkList');
  if (input.prefix !== undefined && type !== 'autoNumber') throw refuse('prefix', 'autoNumber');
  switch (type) {
    case 'usd':
      return { type: 'number', currency: 'USD' };
    case 'oneOf':
      return { type: 'oneOf', values: checkOptions(input.options ?? []) };
    case 'link':
    case 'linkList': {
      if (input.linkTo === undefined) throw new ValidationFailed(`a ${type} field needs --link-to <object>`);
      if (!catalogue.object(input.linkTo)) throw new NotFound(`unknown object "${input.linkTo}" to link to`);
      return { type, object: input.linkTo };
    }
    case 'autoNumber': {
      const prefix = input.prefix ?? '';
      if (!/^[A-Za-z0-9][A-Za-z0-9-]{0,9}$/.test(prefix)) throw new ValidationFailed('an autoNumber field needs --prefix: 1 to 10 letters, digits and dashes, e.g. OP-');
      return { type: 'autoNumber', prefix };
    }
    default:
      return { type } as FieldFormat;
  }
}

function checkOptions(options: string[]): string[] {
  const values = options.map((option) => option.trim()).filter((option) => option !== '');
  if (values.length === 0) throw new ValidationFailed('a oneOf field needs --options "A,B,C" (at least one value)');
  for (const value of values) checkOption(value);
  const repeated = values.find((value, i) => values.findIndex((other) => other.toLowerCase() === value.toLowerCase()) !== i);
  if (repeated) throw new ValidationFailed(`the option "${repeated}" is given twice`);
  return values;
}

function checkOption(value: string): void {
  if (value.length > MAX_OPTION) throw new ValidationFailed(`an option is at most ${MAX_OPTION} characters`);
}

function checkKey(what: string, key: string): void {
  if (!KEY_RULE.test(key)) {
    throw new ValidationFailed(`the ${what} key "${key}" must start with a lowercase letter and have 1 to 40 letters and digits (e.g. onboardingProjects)`);
  }
}

/** "onboardingProjects" -> "Onboarding projects". */
export function labelOf(key: string): string {
  const words = key.replace(/([A-Z])/g, ' $1').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function customField(state: SchemaState, object: string, key: string): CustomField {
  const field = state.fields.find((candidate) => candidate.object === object && candidate.def.key === key);
  if (!field) throw new NotFound(`no workspace-defined field "${key}" on ${object} (default fields cannot be changed)`);
  return field;
}

export function decideSchema(command: SchemaCommand, state: SchemaState, catalogue: Catalogue): SchemaEvent[] {
  switch (command.type) {
    case 'CreateObject': {
      checkKey('object', command.key);
      const reserved = RESERVED_OBJECT_KEYS.get(command.key);
      if (reserved) throw new ValidationFailed(`the object key "${command.key}" is reserved by the API (${reserved}); choose another key`);
      const existing = catalogue.object(command.key);
      if (existing) throw new ValidationFailed(`the object key "${command.key}" is taken by ${existing.custom ? 'a workspace-defined' : 'a default'} object`);
      const nameField = command.nameField ?? 'name';
      checkKey('record name field', nameField);
      if (RESERVED_FIELD_KEYS.has(nameField)) throw new ValidationFailed(`"${nameField}" is reserved by the API and cannot be a field key`);
      const field: FieldDef = { key: nameField, label: command.nameLabel ?? labelOf(nameField), required: true, format: { type: 'text' } };
      return [
        { type: 'ObjectCreated', data: { key: command.key, label: command.label, nameField } },
        { type: 'FieldAdded', data: { object: command.key, field } },
      ];
    }
    case 'AddField': {
      const object = catalogue.object(command.object);
      if (!object) throw new NotFound(`unknown object "${command.object}"`);
      checkKey('field', command.key);
      if (RESERVED_FIELD_KEYS.has(command.key)) throw new ValidationFailed(`"${command.key}" is reserved by the API and cannot be a field key`);
      const active = object.fields.find((field) => field.key === command.key);
      if (active) throw new ValidationFailed(`${command.object} already has a ${active.custom ? '' : 'default '}field "${command.key}"`);
      const inactive = object.inactiveFields?.find((field) => field.key === command.key);
      if (inactive) {
        throw new ValidationFailed(`${command.object} has a deactivated field "${command.key}"; its key is not reused (csr fields reactivate brings it back)`);
      }
      if (object.fields.length >= MAX_FIELDS) throw new ValidationFailed(`${command.object} has ${MAX_FIELDS} fields, the most an object may have`);
      if (command.format.type === 'autoNumber') {
        if (object.fields.some((field) => field.format.type === 'autoNumber')) throw new ValidationFailed(`${command.object} already has an auto number field`);
        if (command.required) throw new ValidationFailed('an auto number is filled in by the service: it cannot be --required');
      }
      const field: FieldDef = {
        key: command.key,
        label: command.label ?? labelOf(command.key),
        required: command.required,
        format: command.format,
        ...(command.personal ? { personal: true } : {}),
      };
      return [{ type: 'FieldAdded', data: { object: command.object, field } }];
    }
    case 'ChangeFieldLabel': {
      customField(state, command.object, command.key);
      return [{ type: 'FieldLabelChanged', data: { object: command.object, key: command.key, label: command.label } }];
    }
    case 'AddFieldOption': {
      const field = customField(state, command.object, command.key);
      if (field.def.format.type !== 'oneOf') throw new ValidationFailed(`"${command.key}" is not a oneOf field`);
      const value = command.value.trim();
      if (value === '') throw new ValidationFailed('the option must not be empty');
      checkOption(value);
      if (field.def.format.values.some((other) => other.toLowerCase() === value.toLowerCase())) throw new ValidationFailed(`"${command.key}" already has the option "${value}"`);
      return [{ type: 'FieldOptionAdded', data: { object: command.object, key: command.key, value } }];
    }
    case 'DeactivateField': {
      const field = customField(state, command.object, command.key);
      const owner = state.objects.find((object) => object.key === command.object);
      if (owner?.nameField === command.key) throw new ValidationFailed(`"${command.key}" is the record name of ${command.object} and cannot be deactivated`);
      return field.active ? [{ type: 'FieldDeactivated', data: { object: command.object, key: command.key } }] : [];
    }
    case 'ReactivateField': {
      const field = customField(state, command.object, command.key);
      return field.active ? [] : [{ type: 'FieldReactivated', data: { object: command.object, key: command.key } }];
    }
  }
}

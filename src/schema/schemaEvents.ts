import type { FieldDef, FieldFormat } from './types.js';

/**
 * A workspace's own objects and fields are events in its stream (`workspace-<id>`, beside the
 * Setup events, so they are in the audit trail with their actor), folded by `evolve` into the
 * state the catalogue is built from. A rebuild replays them, so the schema is what it was at
 * every moment of the log.
 */

export const SCHEMA_EVENT_SCHEMA_VERSION = 1;

export interface CustomObjectDef {
  key: string;
  label: string;
  /** The field whose value is the record name (a required Text field made with the object). */
  nameField: string;
}

export type SchemaEvent =
  | { type: 'ObjectCreated'; data: { key: string; label: string; nameField: string } }
  | { type: 'FieldAdded'; data: { object: string; field: FieldDef } }
  | { type: 'FieldLabelChanged'; data: { object: string; key: string; label: string } }
  | { type: 'FieldOptionAdded'; data: { object: string; key: string; value: string } }
  | { type: 'FieldDeactivated'; data: { object: string; key: string } }
  | { type: 'FieldReactivated'; data: { object: string; key: string } };

export const SCHEMA_EVENT_TYPES: ReadonlySet<string> = new Set([
  'ObjectCreated',
  'FieldAdded',
  'FieldLabelChanged',
  'FieldOptionAdded',
  'FieldDeactivated',
  'FieldReactivated',
]);

export interface CustomField {
  object: string;
  def: FieldDef;
  active: boolean;
}

export interface SchemaState {
  /** Revision of the last event of the workspace stream read (-1: none): what an append expects. */
  revision: number;
  objects: readonly CustomObjectDef[];
  /** In the order they were added. */
  fields: readonly CustomField[];
}

export const EMPTY_SCHEMA: SchemaState = { revision: -1, objects: [], fields: [] };

const updateField = (state: SchemaState, object: string, key: string, change: (field: CustomField) => CustomField): SchemaState => ({
  ...state,
  fields: state.fields.map((field) => (field.object === object && field.def.key === key ? change(field) : field)),
});

/** Folds one schema event (anything else only moves the revision). Pure. */
export function evolve(state: SchemaState, event: { type: string; data: Record<string, unknown> }, revision: number): SchemaState {
  const next = { ...state, revision };
  if (!SCHEMA_EVENT_TYPES.has(event.type)) return next;
  const schemaEvent = event as unknown as SchemaEvent;
  switch (schemaEvent.type) {
    case 'ObjectCreated': {
      const { key, label, nameField } = schemaEvent.data;
      return { ...next, objects: [...next.objects, { key, label, nameField }] };
    }
    case 'FieldAdded':
      return { ...next, fields: [...next.fields, { object: schemaEvent.data.object, def: freezeField(schemaEvent.data.field), active: true }] };
    case 'FieldLabelChanged': {
      const { object, key, label } = schemaEvent.data;
      return updateField(next, object, key, (field) => ({ ...field, def: freezeField({ ...field.def, label }) }));
    }
    case 'FieldOptionAdded': {
      const { object, key, value } = schemaEvent.data;
      return updateField(next, object, key, (field) => {
        const format = field.def.format;
        if (format.type !== 'oneOf') return field;
        return { ...field, def: freezeField({ ...field.def, format: { type: 'oneOf', values: [...format.values, value] } }) };
      });
    }
    case 'FieldDeactivated':
      return updateField(next, schemaEvent.data.object, schemaEvent.data.key, (field) => ({ ...field, active: false }));
    case 'FieldReactivated':
      return updateField(next, schemaEvent.data.object, schemaEvent.data.key, (field) => ({ ...field, active: true }));
  }
}

/** Definitions are shared by every request: frozen, so none can change another's. */
function freezeField(field: FieldDef): FieldDef {
  const format: FieldFormat = field.format.type === 'oneOf' ? Object.freeze({ ...field.format, values: Object.freeze([...field.format.values]) }) : Object.freeze({ ...field.format });
  return Object.freeze({ ...field, format, custom: true });
}

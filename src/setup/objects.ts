import { randomUUID } from 'node:crypto';
import { Conflict, NotFound } from '../core/errors.js';
import { formatLabel, isReadOnly } from '../schema/formats.js';
import type { Actor, EventStore } from '../eventstore/port.js';
import { newId } from '../core/ids.js';
import { buildCatalogue, type Catalogue } from '../schema/catalogue.js';
import { loadSchema } from './catalogues.js';
import { decideSchema, parseFormatInput, type FormatInput, type SchemaCommand } from '../schema/schemaDecider.js';
import { SCHEMA_EVENT_SCHEMA_VERSION, type SchemaEvent } from '../schema/schemaEvents.js';
import type { FieldDef, ObjectDef } from '../schema/types.js';
import { workspaceStream } from '../events/workspace.js';
import { parse, text } from './input.js';
import type { SetupStore, Workspace } from './port.js';

/**
 * The Object Manager (spec 1): a workspace's own objects and fields, behind `csr objects` and
 * `csr fields`. Each change is decided against the schema as the log has it and appended to the
 * workspace stream at the revision it was decided on: two concurrent changes cannot both take a
 * key; the loser decides again on the winner's schema.
 */

const ATTEMPTS = 5;

export interface ListedObject {
  key: string;
  label: string;
  custom: boolean;
  fields: number;
  recordName: string[];
}

export interface ListedField {
  key: string;
  label: string;
  format: string;
  required: boolean;
  personal: boolean;
  custom: boolean;
  active: boolean;
  readOnly: boolean;
  /** An auto number's prefix (e.g. `ONB-`), which its values start with; absent for other formats. */
  prefix?: string;
}

export interface NewFieldInput extends FormatInput {
  label?: string;
  required?: boolean;
  personal?: boolean;
}

export class ObjectManager {
  constructor(private readonly options: { setup: SetupStore; events: EventStore; actor: Actor }) {}

  async catalogue(workspaceSlug: string): Promise<Catalogue> {
    const workspace = await this.workspace(workspaceSlug);
    return buildCatalogue(workspace.id, await loadSchema(this.options.events, workspace.id));
  }

  async createObject(workspaceSlug: string, key: string, input: { name: string; recordName?: string; recordNameLabel?: string }): Promise<ListedObject> {
    const label = parse(text('the object name', 200), input.name);
    const catalogue = await this.change(workspaceSlug, () => ({
      type: 'CreateObject',
      key,
      label,
      ...(input.recordName !== undefined ? { nameField: input.recordName } : {}),
      ...(input.recordNameLabel !== undefined ? { nameLabel: parse(text('the label', 200), input.recordNameLabel) } : {}),
    }));
    return listedObject(catalogue.object(key)!);
  }

  async listObjects(workspaceSlug: string): Promise<ListedObject[]> {
    return (await this.catalogue(workspaceSlug)).objects.map(listedObject);
  }

  async addField(workspaceSlug: string, object: string, key: string, input: NewFieldInput): Promise<ListedField> {
    const label = input.label === undefined ? undefined : parse(text('the label', 200), input.label);
    const catalogue = await this.change(workspaceSlug, (current) => ({
      type: 'AddField',
      object,
      key,
      ...(label !== undefined ? { label } : {}),
      format: parseFormatInput(input, current),
      required: input.required === true,
      personal: input.personal === true,
    }));
    return listedField(catalogue.object(object)!.fields.find((field) => field.key === key)!, true);
  }

  async listFields(workspaceSlug: string, object: string): Promise<ListedField[]> {
    const found = (await this.catalogue(workspaceSlug)).object(object);
    if (!found) throw new NotFound(`unknown object "${object}"`);
    return [...found.fields.map((field) => listedField(field, true)), ...(found.inactiveFields ?? []).map((field) => listedField(field, false))];
  }

  async setActive(workspaceSlug: string, object: string, key: string, active: boolean): Promise<ListedField> {
    const catalogue = await this.change(workspaceSlug, () => ({ type: active ? 'ReactivateField' : 'DeactivateField', object, key }));
    return this.fieldOf(catalogue, object, key);
  }

  async changeLabel(workspaceSlug: string, object: string, key: string, label: string): Promise<ListedField> {
    const valid = parse(text('the label', 200), label);
    return this.fieldOf(await this.change(workspaceSlug, () => ({ type: 'ChangeFieldLabel', object, key, label: valid })), object, key);
  }

  async addOption(workspaceSlug: string, object: string, key: string, value: string): Promise<ListedField> {
    return this.fieldOf(await this.change(workspaceSlug, () => ({ type: 'AddFieldOption', object, key, value })), object, key);
  }

  private fieldOf(catalogue: Catalogue, object: string, key: string): ListedField {
    const found = catalogue.object(object)!;
    const active = found.fields.find((field) => field.key === key);
    return active ? listedField(active, true) : listedField(found.inactiveFields!.find((field) => field.key === key)!, false);
  }

  /** Decides on the schema as the log has it and appends at that revision; the catalogue after. */
  private async change(workspaceSlug: string, command: (catalogue: Catalogue) => SchemaCommand): Promise<Catalogue> {
    const workspace = await this.workspace(workspaceSlug);
    for (let attempt = 1; ; attempt++) {
      let state = await loadSchema(this.options.events, workspace.id);
      const catalogue = buildCatalogue(workspace.id, state);
      const events = decideSchema(command(catalogue), state, catalogue);
      if (events.length === 0) return catalogue;
      try {
        const actionId = randomUUID();
        await this.options.events.append(
          workspaceStream(workspace.id),
          events.map((event: SchemaEvent) => ({
            id: newId(),
            type: event.type,
            data: { schemaVersion: SCHEMA_EVENT_SCHEMA_VERSION, workspaceId: workspace.id, ...event.data },
            metadata: { source: 'app', actor: this.options.actor, actionId, correlationId: actionId, causationId: actionId },
          })),
          { expectedRevision: state.revision === -1 ? 'no_stream' : state.revision },
        );
        state = await loadSchema(this.options.events, workspace.id);
        return buildCatalogue(workspace.id, state);
      } catch (error) {
        // Another change of this workspace (schema or Setup) came first: decide again on it.
        if (!(error instanceof Conflict)) throw error;
        if (attempt >= ATTEMPTS) throw new Error('the workspace kept changing while saving this change; run the command again', { cause: error });
      }
    }
  }

  private async workspace(slug: string): Promise<Workspace> {
    const workspace = await this.options.setup.workspaceBySlug(slug);
    if (!workspace) throw new NotFound(`workspace "${slug}" not found`);
    return workspace;
  }
}

function listedObject(object: ObjectDef): ListedObject {
  return { key: object.key, label: object.label, custom: object.custom === true, fields: object.fields.length, recordName: [...object.nameFields] };
}

function listedField(field: FieldDef, active: boolean): ListedField {
  return {
    key: field.key,
    label: field.label,
    format: formatLabel(field.format),
    required: field.required,
    personal: field.personal === true,
    custom: field.custom === true,
    active,
    readOnly: isReadOnly(field.format),
    ...(field.format.type === 'autoNumber' ? { prefix: field.format.prefix } : {}),
  };
}

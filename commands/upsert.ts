import { AppError, InsufficientStorage, ValidationFailed } from '../src/core/errors.js';
import type { EventMetadata, StreamAppend } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { newId } from '../src/core/ids.js';
import { filterKey } from '../src/schema/filterKey.js';
import type { FieldFilter, Values } from '../src/readstore/port.js';
import { feedsRollups } from '../src/schema/calculated.js';
import { recordName, uniqueFields } from '../src/schema/catalogue.js';
import type { ObjectDef } from '../src/schema/types.js';
import { checkRecordRules, validateRecord } from '../src/schema/validate.js';
import { metadataFor, type Action } from './action.js';
import type { CommandDeps } from './deps.js';
import type { NumberedField } from './autoNumbers.js';
import { newClientHealthScore } from '../src/schema/healthScore.js';
import { createRecord } from './create.js';
import type { RecordCommand } from './record/decider.js';
import { executeRecordCommand, loadRecord, type LoadedRecord } from './record/repository.js';
import { fieldsKey, nameKey, type ReservationKey } from './reservations/keys.js';
import { ReferenceResolver } from './references.js';

/** POST /api/v1/{object}: create or update up to 1000 records (spec 4.2, PRODUCT.md section 3). */

export const MAX_RECORDS_PER_REQUEST = 1000;
/** Records planned between two turns of the event loop. */
const PLAN_SLICE = 50;

export interface UpsertOptions {
  /** Validate, resolve and match, and write nothing (csv import --dry-run). */
  dryRun?: boolean;
  /**
   * Appends that belong to a new record and are written in the same group as its own create
   * (all or none on the embedded store): the steps and tasks of a playbook made from a template.
   */
  withCreate?: (recordId: string, values: Values) => Promise<StreamAppend[]>;
}

export interface SaveResult {
  created: number;
  updated: number;
  errors: { index: number; message: string }[];
  ids: string[];
}

/** How one record (or several of the request that match it) is saved; a create becomes an update when it loses its match key to another writer. */
interface Plan {
  kind: 'create' | 'update';
  index: number;
  recordId: string;
  values: Values;
  loaded?: LoadedRecord;
  matchKey: ReservationKey | null;
}

export async function upsertRecords(
  deps: CommandDeps,
  action: Action,
  object: ObjectDef,
  body: unknown,
  match: string | undefined,
  options: UpsertOptions = {},
): Promise<SaveResult> {
  const inputs = recordsOf(body);
  const matchFields = match === undefined ? null : parseMatch(object, match);
  const resolver = new ReferenceResolver(deps.readStore, action.workspaceId, deps.listUsers);
  const errors: SaveResult['errors'] = [];
  const plans: Plan[] = [];
  /** The plan that saves each request record (several records may match one new record). */
  const targets: (Plan | undefined)[] = [];
  // Records created earlier in this request are not in the read model yet: match them here.
  const createdInRequest = new Map<string, Plan>();

  for (const [index, input] of inputs.entries()) {
    // Planning resolves through promises that are often settled already: without a turn of the
    // event loop now and then, a 1,000-record body would hold every other request up meanwhile.
    if (index % PLAN_SLICE === PLAN_SLICE - 1) await new Promise((resolve) => setImmediate(resolve));
    const planned = await planRecord(deps, action, object, matchFields, resolver, createdInRequest, index, input);
    if ('message' in planned) {
      errors.push({ index, message: planned.message });
      continue;
    }
    targets[index] = planned;
    if (planned.index === index) plans.push(planned);
  }

  // Validated, resolved and matched exactly as a real save, then nothing is written (csv import --dry-run).
  if (options.dryRun) return dryRunResult(targets, errors);

  const metadata = metadataFor(action, { [object.key]: new Set(plans.map((plan) => plan.recordId)).size });
  const numbersMetadata = metadataFor(action, {});
  const outcomes = await Promise.allSettled(plans.map((plan) => savePlan(deps, action, object, plan, metadata, numbersMetadata, options.withCreate)));

  const positions: Position[] = [];
  const failedPlans = new Map<Plan, string>();
  let storageFull: InsufficientStorage | null = null;
  plans.forEach((plan, i) => {
    const outcome = outcomes[i]!;
    if (outcome.status === 'rejected') {
      failedPlans.set(plan, errorMessage(deps, outcome.reason));
      if (outcome.reason instanceof InsufficientStorage) storageFull = outcome.reason;
    } else if (outcome.value) positions.push(outcome.value);
  });
  if (positions.length > 0) {
    const feeds = plans.some((plan) => feedsRollups(object.key, plan.values, plan.loaded?.state.status === 'live' ? plan.loaded.state.fields : undefined));
    await deps.waitVisible(positions.reduce((a, b) => (a > b ? a : b)), feeds ? object.key : undefined);
  }

  const result: SaveResult = { created: 0, updated: 0, errors, ids: [] };
  targets.forEach((plan, index) => {
    if (!plan) return;
    const failure = failedPlans.get(plan);
    if (failure !== undefined) {
      errors.push({ index, message: failure });
      return;
    }
    result.ids.push(plan.recordId);
    if (plan.kind === 'create' && plan.index === index) result.created++;
    else result.updated++;
  });
  errors.sort((a, b) => a.index - b.index);
  // Nothing saved for want of space is the store's failure, not the records': 507, not 422.
  // When some records were saved the answer must say which (207), full disk or not.
  if (storageFull && result.ids.length === 0) throw storageFull;
  return result;
}

/**
 * Saves one plan. A create that finds its match key held by another record (a concurrent
 * request created it first) updates that record instead, as if the requests had run one after
 * the other.
 */
async function savePlan(
  deps: CommandDeps,
  action: Action,
  object: ObjectDef,
  plan: Plan,
  metadata: EventMetadata,
  numbersMetadata: EventMetadata,
  withCreate: UpsertOptions['withCreate'],
): Promise<Position | null> {
  if (plan.kind === 'create') {
    const numbered = numberedField(object, plan.values);
    const also = withCreate ? await withCreate(plan.recordId, plan.values) : [];
    const values = object.key === 'clients' ? { ...plan.values, healthScore: newClientHealthScore() } : plan.values;
    const request = { workspaceId: action.workspaceId, object, recordId: plan.recordId, values, matchKey: plan.matchKey, numbered, also };
    const outcome = await createRecord(deps, request, metadata, numbersMetadata);
    if (outcome.kind === 'created') return outcome.position;
    plan.kind = 'update';
    plan.recordId = outcome.holder;
    plan.loaded = undefined;
  }
  const position = await executeRecordCommand(deps.events, object, plan.recordId, () => commandFor(action, object, plan), metadata, plan.loaded);
  // Nothing changed, but the record found through its reservation may not be visible yet.
  return position ?? (plan.loaded ? null : await deps.events.headPosition());
}

type Planned = Plan | { message: string };

async function planRecord(
  deps: CommandDeps,
  action: Action,
  object: ObjectDef,
  matchFields: string[] | null,
  resolver: ReferenceResolver,
  createdInRequest: Map<string, Plan>,
  index: number,
  input: unknown,
): Promise<Planned> {
  const validated = validateRecord(object, input, 'update');
  if (!validated.ok) {
    // A record nothing could match is a create: its message lists the required fields it lacks too, as PATCH lists every problem.
    const asNew = onlyCreates(object, matchFields, input) ? validateRecord(object, input, 'create') : validated;
    return { message: asNew.ok ? validated.message : asNew.message };
  }
  const resolved = await resolver.resolve(validated.fields);
  if (!resolved.ok) return { message: resolved.message };
  const values = resolved.values;

  let target: { recordId: string; loaded: LoadedRecord } | null = null;
  let matchKey: string | null = null;
  let reservation: ReservationKey | null = null;
  if (validated.id !== undefined) {
    const loaded = await loadRecord(deps.events, validated.id);
    if (!isLiveRecord(loaded, action.workspaceId, object.key)) return { message: `no ${object.key} record with id ${validated.id}` };
    target = { recordId: validated.id, loaded };
  } else {
    const criteria = matchCriteria(object, matchFields, values);
    if ('message' in criteria) return criteria;
    if (criteria.key !== null) {
      matchKey = criteria.key;
      reservation = criteria.reservation;
      const earlier = createdInRequest.get(matchKey);
      if (earlier) {
        const rules = checkRecordRules(object.key, { ...earlier.values, ...values });
        if (rules) return { message: rules };
        Object.assign(earlier.values, values);
        return earlier;
      }
      const found = await deps.readStore.find({ workspaceId: action.workspaceId, object: object.key, ...criteria.query, limit: 2, offset: 0 });
      if (found.total > 1) return { message: `ambiguous match: ${found.total} records` };
      const existing = found.documents[0];
      if (existing) target = { recordId: existing.id, loaded: await loadRecord(deps.events, existing.id) };
    }
  }

  if (target) {
    if (target.loaded.state.status !== 'live') return { message: `no ${object.key} record with id ${target.recordId}` };
    const rules = checkRecordRules(object.key, { ...target.loaded.state.fields, ...values });
    if (rules) return { message: rules };
    return { kind: 'update', index, recordId: target.recordId, values, loaded: target.loaded, matchKey: null };
  }

  const asNew = validateRecord(object, input, 'create');
  if (!asNew.ok) return { message: asNew.message };
  const rules = checkRecordRules(object.key, values);
  if (rules) return { message: rules };
  const plan: Plan = { kind: 'create', index, recordId: newId(), values, matchKey: reservation };
  if (matchKey !== null) createdInRequest.set(matchKey, plan);
  return plan;
}

function isLiveRecord(loaded: LoadedRecord, workspaceId: string, object: string): boolean {
  return loaded.state.status === 'live' && loaded.state.workspaceId === workspaceId && loaded.state.object === object;
}

type Criteria = { key: string | null; reservation: ReservationKey | null; query: { filters: FieldFilter[]; name?: string } } | { message: string };

/** What finds the record to update: ?match= fields, else the unique fields sent, else the record name. */
function matchCriteria(object: ObjectDef, matchFields: string[] | null, values: Values): Criteria {
  const byFields = (fields: string[]): Criteria => {
    const filters: FieldFilter[] = [];
    for (const field of fields) {
      const value = values[field];
      if (value === undefined || value === null || Array.isArray(value)) {
        return { message: `match field '${field}' needs a single value in this record` };
      }
      filters.push({ field, value: filterKey(value) });
    }
    // ?match= on exactly the name fields is the default name match: one reservation for both.
    const reservation = isNameFields(object, fields) ? nameKey(object, values) : fieldsKey(fields, values);
    return { key: filters.map((filter) => `${filter.field}=${filter.value}`).join('&'), reservation, query: { filters } };
  };
  if (matchFields) return byFields(matchFields);
  const unique = uniqueFields(object).filter((field) => values[field] !== undefined && values[field] !== null);
  if (unique.length > 0) return byFields(unique);
  if (!object.matchByName) return { key: null, reservation: null, query: { filters: [] } };
  const name = recordName(object, values);
  if (name === null) return { key: null, reservation: null, query: { filters: [] } };
  return { key: `name=${filterKey(name)}`, reservation: nameKey(object, values), query: { filters: [], name: filterKey(name) } };
}

/** Whether the input can only create: no id, no ?match=, and none of the fields a default match looks at. */
function onlyCreates(object: ObjectDef, matchFields: string[] | null, input: unknown): boolean {
  if (!isPlainObject(input) || matchFields || Object.hasOwn(input, 'id')) return false;
  const matching = [...uniqueFields(object), ...(object.matchByName ? object.nameFields : [])];
  return !matching.some((field) => Object.hasOwn(input, field));
}

function isNameFields(object: ObjectDef, fields: string[]): boolean {
  return object.matchByName && fields.length === object.nameFields.length && object.nameFields.every((field) => fields.includes(field));
}

function parseMatch(object: ObjectDef, match: string): string[] {
  const fields = match.split(',').map((field) => field.trim()).filter(Boolean);
  if (fields.length === 0) throw new ValidationFailed('match: give one or more comma-separated field keys');
  for (const key of fields) {
    const field = object.fields.find((candidate) => candidate.key === key);
    if (!field) throw new ValidationFailed(`match: unknown field '${key}' for object ${object.key}`);
    if (field.format.type === 'files' || field.format.type === 'calculated' || field.format.type === 'linkList') {
      throw new ValidationFailed(`match: field '${key}' cannot be used to match records`);
    }
  }
  return fields;
}

/** The three body forms of spec 4.2: one record, an array, or { records: [...] }. */
function recordsOf(body: unknown): unknown[] {
  let records: unknown[];
  if (Array.isArray(body)) records = body;
  else if (isPlainObject(body) && Object.keys(body).length === 1 && Array.isArray(body['records'])) records = body['records'];
  else if (isPlainObject(body)) records = [body];
  else throw new ValidationFailed('the body must be a record object, an array of records or { "records": [...] }');
  if (records.length === 0) throw new ValidationFailed('the request contains no records');
  if (records.length > MAX_RECORDS_PER_REQUEST) {
    throw new ValidationFailed(`too many records: ${records.length} (at most ${MAX_RECORDS_PER_REQUEST} per request)`);
  }
  return records;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function commandFor(action: Action, object: ObjectDef, plan: Plan): RecordCommand {
  return { type: plan.kind === 'create' ? 'CreateRecord' : 'UpdateRecord', workspaceId: action.workspaceId, object: object.key, recordId: plan.recordId, fields: plan.values };
}

/** The object's auto-number field, when this new record takes a number (each object has at most one). */
function numberedField(object: ObjectDef, values: Values): NumberedField | null {
  for (const field of object.fields) {
    if (field.format.type !== 'autoNumber') continue;
    return (values[field.key] ?? null) === null ? { object, field: field.key, prefix: field.format.prefix } : null;
  }
  return null;
}

function dryRunResult(targets: (Plan | undefined)[], errors: SaveResult['errors']): SaveResult {
  const result: SaveResult = { created: 0, updated: 0, errors, ids: [] };
  targets.forEach((plan, index) => {
    if (!plan) return;
    if (plan.kind === 'create' && plan.index === index) result.created++;
    else result.updated++;
  });
  return result;
}

/** A record's failure as its client reads it: typed errors say what to do; anything else is internal and never shown. */
function errorMessage(deps: CommandDeps, error: unknown): string {
  if (error instanceof AppError) return error.message;
  deps.reportInternal?.(error);
  return 'internal error; this record was not saved';
}

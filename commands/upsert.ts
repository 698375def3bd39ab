import { AppError, InsufficientStorage, ValidationFailed } from '../src/core/errors.js';
import type { EventMetadata, StreamAppend } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { newId } from '../src/core/ids.js';
import { inFlight } from '../src/core/inFlight.js';
import { filterKey } from '../src/schema/filterKey.js';
import type { FieldFilter, FindQuery, FindResult, Values } from '../src/readstore/port.js';
import { feedsRollups } from '../src/schema/calculated.js';
import { recordName, uniqueFields } from '../src/schema/catalogue.js';
import type { ObjectDef } from '../src/schema/types.js';
import { checkRecordRules, validateRecord } from '../src/schema/validate.js';
import { metadataFor, type Action } from './action.js';
import { recordsInBody } from './bodyForms.js';
import type { CommandDeps } from './deps.js';
import type { NumberedField } from './autoNumbers.js';
import { newClientHealthScore } from '../src/schema/healthScore.js';
import { createRecord } from './create.js';
import type { RecordCommand } from './record/decider.js';
import { assertIfMatch, ifMatchProblem, type IfMatch } from './record/ifMatch.js';
import { executeRecordCommand, loadRecord, type LoadedRecord } from './record/repository.js';
import { fieldsKey, nameKey, type ReservationKey } from './reservations/keys.js';
import { ReferenceResolver } from './references.js';

/** POST /api/v1/{object}: create or update up to 1000 records (spec 4.2, PRODUCT.md section 3). */

export const MAX_RECORDS_PER_REQUEST = 1000;
/** Records planned between two turns of the event loop. */
const PLAN_SLICE = 50;
/**
 * Plans saved together, one slice after the other. The request answers when the read model shows
 * its last write, so committing all of it at once left the projector idle until the API had done
 * everything, then the API idle until the projector had; in slices, the projector applies one
 * while the API saves the next. A slice's creates are decided in one turn of the event loop and
 * reach the log together: where the store commits on a thread of its own
 * (EventStore.commitsOnOwnThread), that thread commits them as one group, and 200 a group cost
 * the least on two cores (100 or 500 cost more, and so did starting the next slice while one
 * commits, whose groups were smaller: docs/performance.md). Where a server commits (PostgreSQL),
 * 100. Numbers still follow the request's order (they are reserved in the order asked), and
 * records matched within the request were planned before any save.
 */
const SAVE_SLICE = { ownThread: 200, server: 100 };

export interface UpsertOptions {
  /** Validate, resolve and match, and write nothing (csv import --dry-run). */
  dryRun?: boolean;
  /**
   * Appends that belong to a new record and are written in the same group as its own create
   * (all or none on the embedded store): the steps and tasks of a playbook made from a template.
   */
  withCreate?: (recordId: string, values: Values) => Promise<StreamAppend[]>;
  /** If-Match (docs/sync-clients.md): each record must carry an id and be at a revision it names; one that is not fails alone. */
  ifMatch?: IfMatch;
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

  // Every record is validated and resolved first, then what the stores must say about them (the
  // records they name by id, the records their match keys find) is read a few at a time: on a
  // server store each read is a round trip, and a 1,000-record body read them one after the other.
  const prepared: Prepared[] = [];
  for (const [index, input] of inputs.entries()) {
    // Planning resolves through promises that are often settled already: without a turn of the
    // event loop now and then, a 1,000-record body would hold every other request up meanwhile.
    if (index % PLAN_SLICE === PLAN_SLICE - 1) await new Promise((resolve) => setImmediate(resolve));
    prepared.push(await prepareRecord(object, matchFields, resolver, input, options.ifMatch));
  }
  const stored = await lookUp(deps, action, object, prepared);
  for (const [index, record] of prepared.entries()) {
    const planned = planRecord(action, object, stored, createdInRequest, index, record, options.ifMatch);
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
  const size = deps.events.commitsOnOwnThread ? SAVE_SLICE.ownThread : SAVE_SLICE.server;
  const outcomes: PromiseSettledResult<Position | null>[] = [];
  for (let start = 0; start < plans.length; start += size) {
    const slice = plans.slice(start, start + size);
    outcomes.push(...(await Promise.allSettled(slice.map((plan) => savePlan(deps, action, object, plan, metadata, numbersMetadata, options)))));
  }

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
  { withCreate, ifMatch }: UpsertOptions,
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
  const command = (loaded: LoadedRecord) => {
    assertIfMatch(ifMatch, loaded);
    return commandFor(action, object, plan);
  };
  const position = await executeRecordCommand(deps.events, object, plan.recordId, command, metadata, plan.loaded);
  // Nothing changed, but the record found through its reservation may not be visible yet.
  return position ?? (plan.loaded ? null : await deps.events.headPosition());
}

type Planned = Plan | { message: string };

/** A request record validated and resolved, with what finds the record it updates (or a reason it cannot be saved). */
type Prepared =
  | { message: string }
  | { input: unknown; values: Values; id: string }
  | { input: unknown; values: Values; id: undefined; criteria: Exclude<Criteria, { message: string }> };

async function prepareRecord(object: ObjectDef, matchFields: string[] | null, resolver: ReferenceResolver, input: unknown, ifMatch: IfMatch | undefined): Promise<Prepared> {
  const validated = validateRecord(object, input, 'update');
  if (!validated.ok) {
    // A record nothing could match is a create: its message lists the required fields it lacks too, as PATCH lists every problem.
    const asNew = onlyCreates(object, matchFields, input) ? validateRecord(object, input, 'create') : validated;
    return { message: asNew.ok ? validated.message : asNew.message };
  }
  const resolved = await resolver.resolve(validated.fields);
  if (!resolved.ok) return { message: resolved.message };
  const values = resolved.values;
  if (validated.id !== undefined) return { input, values, id: validated.id };
  if (ifMatch !== undefined) return { message: 'If-Match applies to records sent with an id: send the id of the record whose ETag you give' };
  const criteria = matchCriteria(object, matchFields, values);
  if ('message' in criteria) return criteria;
  return { input, values, id: undefined, criteria };
}

/** What the stores hold for a request's records: each record named by id, and what each match key finds. */
interface Stored {
  loaded: Map<string, LoadedRecord>;
  found: Map<string, { total: number; existing: { id: string; loaded: LoadedRecord } | null }>;
}

/** Reads of the stores in flight at once: a few of a server store's pooled connections, not all of them. */
const READS_IN_FLIGHT = 4;

async function lookUp(deps: CommandDeps, action: Action, object: ObjectDef, prepared: Prepared[]): Promise<Stored> {
  const stored: Stored = { loaded: new Map(), found: new Map() };
  const ids = new Set<string>();
  const queries = new Map<string, FindQuery>();
  for (const record of prepared) {
    if ('message' in record) continue;
    if (record.id !== undefined) ids.add(record.id);
    else if (record.criteria.key !== null) queries.set(record.criteria.key, { workspaceId: action.workspaceId, object: object.key, ...record.criteria.query, limit: 2, offset: 0 });
  }
  await inFlight([...ids], READS_IN_FLIGHT, async (id) => void stored.loaded.set(id, await loadRecord(deps.events, id)));
  // Asked together, PLAN_SLICE at a time: the embedded store answers each slice from one read
  // transaction, where one transaction per find was most of a match's cost, and a slice between
  // two turns of the event loop keeps other requests moving.
  const asked = [...queries];
  const found: FindResult[] = [];
  for (let start = 0; start < asked.length; start += PLAN_SLICE) {
    found.push(...(await deps.readStore.findEach(asked.slice(start, start + PLAN_SLICE).map(([, query]) => query))));
  }
  const matched: { key: string; id: string; total: number }[] = [];
  asked.forEach(([key], at) => {
    const { total, documents } = found[at]!;
    const existing = total > 1 ? undefined : documents[0];
    if (existing) matched.push({ key, id: existing.id, total });
    else stored.found.set(key, { total, existing: null });
  });
  await inFlight(matched, READS_IN_FLIGHT, async ({ key, id, total }) => void stored.found.set(key, { total, existing: { id, loaded: await loadRecord(deps.events, id) } }));
  return stored;
}

/** Matches or creates, in the request's order: records created earlier in the request are not in the read model yet, and are matched here. */
function planRecord(
  action: Action,
  object: ObjectDef,
  stored: Stored,
  createdInRequest: Map<string, Plan>,
  index: number,
  record: Prepared,
  ifMatch: IfMatch | undefined,
): Planned {
  if ('message' in record) return record;
  const { values } = record;
  let target: { recordId: string; loaded: LoadedRecord } | null = null;
  let reservation: ReservationKey | null = null;
  let matchKey: string | null = null;
  if (record.id !== undefined) {
    const loaded = stored.loaded.get(record.id)!;
    if (!isLiveRecord(loaded, action.workspaceId, object.key)) return { message: `no ${object.key} record with id ${record.id}` };
    const moved = ifMatchProblem(ifMatch, loaded);
    if (moved) return { message: moved.message };
    target = { recordId: record.id, loaded };
  } else if (record.criteria.key !== null) {
    matchKey = record.criteria.key;
    reservation = record.criteria.reservation;
    const earlier = createdInRequest.get(matchKey);
    if (earlier) {
      const rules = checkRecordRules(object.key, { ...earlier.values, ...values });
      if (rules) return { message: rules };
      Object.assign(earlier.values, values);
      return earlier;
    }
    const found = stored.found.get(matchKey)!;
    if (found.total > 1) return { message: `ambiguous match: ${found.total} records` };
    if (found.existing) target = { recordId: found.existing.id, loaded: found.existing.loaded };
  }

  if (target) {
    if (target.loaded.state.status !== 'live') return { message: `no ${object.key} record with id ${target.recordId}` };
    const rules = checkRecordRules(object.key, { ...target.loaded.state.fields, ...values });
    if (rules) return { message: rules };
    return { kind: 'update', index, recordId: target.recordId, values, loaded: target.loaded, matchKey: null };
  }

  const asNew = validateRecord(object, record.input, 'create');
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

/** The records of a body in one of its three forms (bodyForms.ts), within the request's limits. */
function recordsOf(body: unknown): unknown[] {
  const records = recordsInBody(body);
  if (records === null) throw new ValidationFailed('the body must be a record object, an array of records or { "records": [...] }');
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

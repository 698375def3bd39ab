import type { Context, Hono } from 'hono';
import { getRecordAsOf, parseAsOf } from '../../queries/asOf.js';
import { getRecordAt, getRecordJson, type RecordJson } from '../../queries/get.js';
import { listRecordsJson } from '../../queries/list.js';
import { type RenderContext } from '../../queries/recordFormat.js';
import { todayUtc } from '../schema/dates.js';
import { newAction } from '../../commands/action.js';
import { deleteRecord } from '../../commands/delete.js';
import { etagOf } from '../../commands/record/ifMatch.js';
import { patchRecord } from '../../commands/patch.js';
import { upsertRecords, type SaveResult } from '../../commands/upsert.js';
import { recordsInBody } from '../../commands/bodyForms.js';
import { upsertPlaybooks } from '../../commands/playbook/fromTemplate.js';
import { NotFound, ValidationFailed } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import type { ObjectDef } from '../schema/types.js';
import { answerHeader } from './answerHeader.js';
import type { Caller } from './auth.js';
import { readJsonBody } from './body.js';
import { ifMatchOf, noneMatch } from './conditional.js';
import type { RateLimitCheck } from './rateLimit.js';
import type { ApiDeps, AppEnv } from './types.js';
import { errorBody, notAllowed } from './errors.js';

export type OneRecordHandler = (c: Context<AppEnv>) => Response | Promise<Response>;

/** The records endpoints of spec section 4; returns GET one record's handler (app.ts serves it on its own too). */
export function recordRoutes(app: Hono<AppEnv>, deps: ApiDeps, limits: RateLimitCheck | null = null): OneRecordHandler {
  const renderContext = (c: Context<AppEnv>): RenderContext => {
    const caller = c.get('caller');
    return {
      workspaceId: caller.workspaceId,
      readStore: deps.readStore,
      listUsers: deps.commands.listUsers,
      canAccess: caller.canAccess,
      today: todayUtc(deps.clock()),
    };
  };
  const action = (c: Context<AppEnv>) => {
    const caller = c.get('caller');
    return newAction(caller.workspaceId, { type: 'apiKey', id: caller.key.id, name: caller.key.name }, 'api', c.get('requestId'));
  };

  const readable = (c: Context<AppEnv>) => readableObject(c, deps);
  const writable = async (c: Context<AppEnv>): Promise<ObjectDef> => {
    const { object, caller } = await objectOf(c, deps);
    caller.assertCanWrite(object.key);
    return object;
  };
  const asOfDeps = (c: Context<AppEnv>) => ({
    events: deps.commands.events,
    find: deps.readStore.find.bind(deps.readStore),
    linkSources: deps.readStore.linkSources.bind(deps.readStore),
    catalogue: deps.catalogues.peek(c.get('caller').workspaceId),
    now: deps.clock(),
  });

  /**
   * The object as the log has it now when the request names a field this process does not know
   * yet (a field added a moment ago by another process), so that it is never refused as unknown.
   */
  const current = async (c: Context<AppEnv>, object: ObjectDef, names: Iterable<string>): Promise<ObjectDef> => {
    const known = knownNames(object);
    for (const name of names) {
      if (!known.has(name)) return (await deps.catalogues.refresh(c.get('caller').workspaceId)).object(object.key) ?? object;
    }
    return object;
  };

  app.get('/api/v1/:object', async (c) => {
    const query = c.req.queries();
    const object = await current(c, await readable(c), Object.keys(query));
    return jsonText(c, await listRecordsJson(renderContext(c), object, query, asOfDeps(c)));
  });

  app.post('/api/v1/:object', async (c) => {
    const object = await writable(c);
    const match = c.req.queries('match');
    const unknown = Object.keys(c.req.queries()).filter((name) => name !== 'match');
    if (unknown.length > 0 || (match && match.length > 1)) {
      throw new ValidationFailed(`unknown or repeated query parameter: ${unknown[0] ?? 'match'} (only ?match= is accepted)`);
    }
    const body = await readJsonBody(c);
    // A write of many records counts one token per record past the first (the request's own was taken with authentication).
    const records = recordCount(body);
    if (limits && records > 1) await limits.charge(c, records - 1);
    const save = object.key === 'playbooks' ? upsertPlaybooks : upsertRecords;
    const ifMatch = ifMatchOf(c);
    const options = ifMatch === undefined ? undefined : { ifMatch };
    const result = await save(deps.commands, action(c), await current(c, object, namesIn(body)), body, match?.[0], options);
    return c.json(saveResultBody(result), saveStatus(result));
  });

  // Not async: a GET answered from the embedded store makes no promise of its own (one record is
  // the API's most frequent request); whatever has to wait (loading a catalogue, another store,
  // linked records, as_of) answers with a promise.
  const oneRecord: OneRecordHandler = (c) => {
    const known = knownObject(c, deps);
    if (known === undefined) return readable(c).then((object) => getOne(c, object));
    c.get('caller').assertCanRead(known.key);
    return getOne(c, known);
  };
  app.get('/api/v1/:object/:id', oneRecord);

  const getOne = (c: Context<AppEnv>, object: ObjectDef): Response | Promise<Response> => {
    refuseQuery(c, 'as_of');
    const asOf = c.req.queries('as_of');
    if (asOf !== undefined) return getAsOf(c, object, asOf);
    const found = getRecordJson(renderContext(c), object, recordId(c));
    return 'json' in found ? answerOne(c, found) : found.then((json) => answerOne(c, json));
  };

  /** The record with its ETag; 304 when If-None-Match names it (docs/sync-clients.md). */
  const answerOne = (c: Context<AppEnv>, { json, revision }: RecordJson): Response => {
    if (revision === undefined) return jsonText(c, `{"data":${json}}`);
    const etag = etagOf(revision);
    answerHeader(c, 'ETag', etag);
    if (noneMatch(c.req.header('If-None-Match'), etag)) return c.body(null, 304);
    return jsonText(c, `{"data":${json}}`);
  };

  const getAsOf = async (c: Context<AppEnv>, object: ObjectDef, asOf: string[]): Promise<Response> => {
    if (asOf.length !== 1) throw new ValidationFailed(`query parameter 'as_of' is given ${asOf.length} times; give it once`);
    const deps = asOfDeps(c);
    const at = parseAsOf(asOf[0]!, deps.now);
    return c.json({ data: await getRecordAsOf(renderContext(c), deps, object, recordId(c), at) });
  };

  app.patch('/api/v1/:object/:id', async (c) => {
    const object = await writable(c);
    refuseQuery(c, null);
    const id = recordId(c);
    const body = await readJsonBody(c);
    const fresh = await current(c, object, namesIn(body));
    await patchRecord(deps.commands, action(c), fresh, id, body, ifMatchOf(c));
    const { record, revision } = await getRecordAt(renderContext(c), fresh, id);
    answerHeader(c, 'ETag', etagOf(revision));
    return c.json({ data: record });
  });

  app.delete('/api/v1/:object/:id', async (c) => {
    const object = await writable(c);
    refuseQuery(c, null);
    const id = recordId(c);
    await deleteRecord(deps.commands, action(c), object, id, ifMatchOf(c));
    return c.json({ deleted: id });
  });

  // After the routes above: every other method (PUT, OPTIONS, ...) of these paths.
  app.all('/api/v1/:object', notAllowed('GET, POST'));
  app.all('/api/v1/:object/:id', notAllowed('GET, PATCH, DELETE'));
  return oneRecord;
}

/** Spec 4.3-4.5 take no query parameters (GET one takes `allowed`): one sent is a 422, never ignored. */
function refuseQuery(c: Context<AppEnv>, allowed: string | null): void {
  if (!c.req.url.includes('?')) return;
  const unknown = Object.keys(c.req.queries()).find((name) => name !== allowed);
  if (unknown !== undefined) throw new ValidationFailed(`unknown query parameter '${unknown}' (${allowed ? `only ${allowed}` : 'this request takes none'})`);
}

/** An answer already made JSON text (from stored renderings): what c.json sends, without the stringify. */
function jsonText(c: Context<AppEnv>, json: string): Response {
  return c.body(json, 200, { 'Content-Type': 'application/json' });
}

/** Spec 4.2 and PRODUCT.md: 201 all created, 200 saved with updates, 207 partial, 422 none saved. */
function saveStatus(result: SaveResult): 200 | 201 | 207 | 422 {
  if (result.ids.length === 0) return 422;
  if (result.errors.length > 0) return 207;
  return result.updated === 0 ? 201 : 200;
}

function saveResultBody(result: SaveResult): SaveResult | (SaveResult & { error: { status: number; message: string } }) {
  if (result.ids.length > 0) return result;
  const first = result.errors[0];
  const message = `no record was saved: ${result.errors.length} failed${first ? ` (first: record ${first.index}: ${first.message})` : ''}`;
  return { ...errorBody(422, message), ...result };
}

/** The object of the path, from the workspace's catalogue; read again before answering that it is unknown. */
async function objectOf(c: Context<AppEnv>, deps: ApiDeps): Promise<{ object: ObjectDef; caller: Caller }> {
  const caller = c.get('caller');
  const key = c.req.param('object') ?? '';
  const catalogue = deps.catalogues.peek(caller.workspaceId) ?? (await deps.catalogues.get(caller.workspaceId));
  const object = catalogue.object(key) ?? (await deps.catalogues.refresh(caller.workspaceId)).object(key);
  if (!object) throw new NotFound(`unknown object '${key}'`);
  return { object, caller };
}

/** The object of the path from the catalogue this process holds; undefined when it has to be loaded or read again. */
function knownObject(c: Context<AppEnv>, deps: ApiDeps): ObjectDef | undefined {
  return deps.catalogues.peek(c.get('caller').workspaceId)?.object(c.req.param('object') ?? '');
}

/** The object of the path, when the caller's key may read it. */
export async function readableObject(c: Context<AppEnv>, deps: ApiDeps): Promise<ObjectDef> {
  const { object, caller } = await objectOf(c, deps);
  caller.assertCanRead(object.key);
  return object;
}

export function recordId(c: Context<AppEnv>): string {
  const id = c.req.param('id') ?? '';
  // Ids are stored in lower case: another spelling names no record.
  if (!isUuid(id) || id !== id.toLowerCase()) throw new NotFound(`record '${id}' not found`);
  return id;
}

const QUERY_NAMES = ['limit', 'offset', 'updated_since', 'as_of', 'match', 'id', 'createdAt', 'updatedAt'];
const knownNamesOf = new WeakMap<ObjectDef, ReadonlySet<string>>();

function knownNames(object: ObjectDef): ReadonlySet<string> {
  let known = knownNamesOf.get(object);
  if (!known) knownNamesOf.set(object, (known = new Set([...QUERY_NAMES, ...object.fields.map((field) => field.key)])));
  return known;
}

/** How many records a body holds, to charge a bulk write per record (what is no record list counts one). */
function recordCount(body: unknown): number {
  return recordsInBody(body)?.length ?? 1;
}

/** The field keys the records of a body name (its three forms, commands/bodyForms.ts). */
function* namesIn(body: unknown): Generator<string> {
  for (const record of recordsInBody(body) ?? []) if (isObject(record)) yield* Object.keys(record);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

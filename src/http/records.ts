import type { Context, Hono } from 'hono';
import { getRecord } from '../../queries/get.js';
import { listRecords } from '../../queries/list.js';
import { todayUtc, type RenderContext } from '../../queries/recordFormat.js';
import { newAction } from '../../commands/action.js';
import { deleteRecord } from '../../commands/delete.js';
import { patchRecord } from '../../commands/patch.js';
import { upsertRecords, type SaveResult } from '../../commands/upsert.js';
import { MethodNotAllowed, NotFound } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { getObject } from '../schema/catalogue.js';
import type { ObjectDef } from '../schema/types.js';
import type { Caller } from './auth.js';
import { readJsonBody } from './body.js';
import type { ApiDeps, AppEnv } from './types.js';
import { errorBody } from './errors.js';

/** The records endpoints of spec section 4. */
export function recordRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
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

  app.get('/api/v1/:object', async (c) => {
    const object = readable(c);
    return c.json(await listRecords(renderContext(c), object, c.req.queries()));
  });

  app.post('/api/v1/:object', async (c) => {
    const object = writable(c);
    const match = c.req.queries('match');
    const unknown = Object.keys(c.req.queries()).filter((name) => name !== 'match');
    if (unknown.length > 0 || (match && match.length > 1)) {
      return c.json(errorBody(422, `unknown or repeated query parameter: ${unknown[0] ?? 'match'} (only ?match= is accepted)`), 422);
    }
    const result = await upsertRecords(deps.commands, action(c), object, await readJsonBody(c), match?.[0]);
    return c.json(saveResultBody(result), saveStatus(result));
  });

  app.get('/api/v1/:object/:id', async (c) => {
    const object = readable(c);
    return c.json({ data: await getRecord(renderContext(c), object, recordId(c)) });
  });

  app.patch('/api/v1/:object/:id', async (c) => {
    const object = writable(c);
    const id = recordId(c);
    await patchRecord(deps.commands, action(c), object, id, await readJsonBody(c));
    return c.json({ data: await getRecord(renderContext(c), object, id) });
  });

  app.delete('/api/v1/:object/:id', async (c) => {
    const object = writable(c);
    const id = recordId(c);
    await deleteRecord(deps.commands, action(c), object, id);
    return c.json({ deleted: id });
  });

  const notAllowed = (allowed: string) => (c: Context<AppEnv>) => {
    c.header('Allow', allowed);
    throw new MethodNotAllowed(`${c.req.method} is not allowed on this path (allowed: ${allowed})`);
  };
  app.on(['PUT', 'PATCH', 'DELETE'], '/api/v1/:object', notAllowed('GET, POST'));
  app.on(['PUT', 'POST'], '/api/v1/:object/:id', notAllowed('GET, PATCH, DELETE'));
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

function objectOf(c: Context<AppEnv>): { object: ObjectDef; caller: Caller } {
  const caller = c.get('caller');
  const key = c.req.param('object') ?? '';
  const object = getObject(caller.workspaceId, key);
  if (!object) throw new NotFound(`unknown object '${key}'`);
  return { object, caller };
}

function readable(c: Context<AppEnv>): ObjectDef {
  const { object, caller } = objectOf(c);
  caller.assertCanRead(object.key);
  return object;
}

function writable(c: Context<AppEnv>): ObjectDef {
  const { object, caller } = objectOf(c);
  caller.assertCanWrite(object.key);
  return object;
}

function recordId(c: Context<AppEnv>): string {
  const id = c.req.param('id') ?? '';
  // Ids are stored in lower case: another spelling names no record.
  if (!isUuid(id) || id !== id.toLowerCase()) throw new NotFound(`record '${id}' not found`);
  return id;
}

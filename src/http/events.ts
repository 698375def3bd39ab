import type { Context, Hono } from 'hono';
import { Forbidden, Gone, ValidationFailed } from '../core/errors.js';
import { parsePosition, type Position } from '../eventstore/position.js';
import { readFeed, type FeedQuery } from '../webhooks/changeFeed.js';
import { EVENT_KINDS, type EventKind } from '../webhooks/port.js';
import { notAllowed } from './errors.js';
import type { ApiDeps, AppEnv } from './types.js';

/**
 * GET /api/v1/events: the change feed (docs/sync-clients.md). `events` is a reserved object key
 * (src/schema/schemaDecider.ts), so this route, registered before the records routes, hides none.
 * Like openapiRoute.ts, it is the object route's first handler: a static segment beside `:object`
 * is something the RegExpRouter cannot compile.
 */

const FEED = 'events';
const OBJECT_PATH = '/api/v1/:object';
const PARAMETERS = new Set(['after', 'limit', 'objects', 'types', 'wait']);
const MAX_WAIT_SECONDS = 30;
const DEFAULT_LIMIT = 100;
const START = 'start';

export function eventRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const renderDeps = {
    events: deps.commands.events,
    readStore: deps.readStore,
    listUsers: deps.commands.listUsers,
    logger: deps.logger,
    clock: deps.clock,
    catalogues: deps.catalogues,
  };
  app.get(OBJECT_PATH, async (c, next) => {
    if (c.req.param('object') !== FEED) return next();
    const caller = c.get('caller');
    const query = await parseQuery(c, deps);
    if (query.after !== 'start') {
      const head = await deps.commands.events.headPosition();
      if (head === null || query.after > head) {
        throw new Gone('this cursor is ahead of the service\'s log (from another service, or from before a restore); start again without "after" and rebuild the copy');
      }
    }
    const page = await readFeed(renderDeps, { workspaceId: caller.workspaceId, canAccess: caller.canAccess }, query, deps.stopping);
    return c.json({ data: page.data, next: encodeCursor(page.next), hasMore: page.hasMore });
  });
  const others = notAllowed('GET');
  app.all(OBJECT_PATH, (c, next) => (c.req.param('object') === FEED ? others(c) : next()));
}

/** Opaque to clients: the log position, so that no client builds one or reads meaning into it. */
export function encodeCursor(position: Position | 'start'): string {
  return Buffer.from(position).toString('base64url');
}

function decodeCursor(cursor: string): Position | 'start' {
  const text = /^[A-Za-z0-9_-]{1,100}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : '';
  if (text === START) return START;
  try {
    parsePosition(text);
    return text;
  } catch {
    throw new ValidationFailed(`query parameter 'after' is not a cursor of this feed: pass the "next" of an earlier answer, or leave it out to start from the beginning`);
  }
}

async function parseQuery(c: Context<AppEnv>, deps: ApiDeps): Promise<FeedQuery> {
  const all = c.req.queries();
  for (const [name, values] of Object.entries(all)) {
    if (!PARAMETERS.has(name)) throw new ValidationFailed(`unknown query parameter '${name}' (this request takes after, limit, objects, types and wait)`);
    if (values.length > 1) throw new ValidationFailed(`query parameter '${name}' is given ${values.length} times; give it once`);
  }
  const one = (name: string) => all[name]?.[0];
  const after = one('after');
  return {
    // Empty is the start too: a shell loop's first `after=$(cat cursor-file)`.
    after: after === undefined || after === '' ? START : decodeCursor(after),
    limit: integer('limit', one('limit'), 1, 1000) ?? DEFAULT_LIMIT,
    objects: await objectsOf(c, deps, one('objects')),
    kinds: kindsOf(one('types')),
    waitMs: (integer('wait', one('wait'), 0, MAX_WAIT_SECONDS) ?? 0) * 1000,
  };
}

function integer(name: string, text: string | undefined, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) throw new ValidationFailed(`query parameter '${name}' must be a whole number from ${min} to ${max}`);
  return value;
}

async function objectsOf(c: Context<AppEnv>, deps: ApiDeps, text: string | undefined): Promise<ReadonlySet<string> | null> {
  if (text === undefined) return null;
  const caller = c.get('caller');
  const keys = list('objects', text);
  let catalogue = await deps.catalogues.get(caller.workspaceId);
  if (keys.some((key) => !catalogue.object(key))) catalogue = await deps.catalogues.refresh(caller.workspaceId);
  for (const key of keys) {
    if (!catalogue.object(key)) throw new ValidationFailed(`query parameter 'objects' names an unknown object '${key}'`);
    if (!caller.canAccess(key)) throw new Forbidden(`this API key has no access to ${key}`);
  }
  return new Set(keys);
}

function kindsOf(text: string | undefined): ReadonlySet<EventKind> | null {
  if (text === undefined) return null;
  const kinds = list('types', text);
  const unknown = kinds.find((kind) => !(EVENT_KINDS as readonly string[]).includes(kind));
  if (unknown !== undefined) throw new ValidationFailed(`query parameter 'types' names '${unknown}'; use created, updated or deleted`);
  return new Set(kinds as EventKind[]);
}

function list(name: string, text: string): string[] {
  const items = text.split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) throw new ValidationFailed(`query parameter '${name}' must be a comma-separated list without empty items`);
  return items;
}

import type { Hono } from 'hono';
import type { ApiDeps, AppEnv } from './types.js';
import { notAllowed } from './errors.js';
import { openApiDocument } from './openapi.js';

const DOCUMENT = 'openapi.json';

/**
 * GET /api/v1/openapi.json: the description of the caller's workspace, as far as its key reaches.
 * Registered as the object route's first handler, not as its own static path: a static segment
 * beside `:object` is something the RegExpRouter (see app.ts) cannot compile. No object is named
 * `openapi.json` (object keys have no dot), so every other path falls through to the records.
 */
export function openApiRoute(app: Hono<AppEnv>, deps: ApiDeps): void {
  app.get('/api/v1/:object', async (c, next) => {
    if (c.req.param('object') !== DOCUMENT) return next();
    const caller = c.get('caller');
    const catalogue = await deps.catalogues.get(caller.workspaceId);
    return c.json(openApiDocument(catalogue, { canAccess: caller.canAccess, readOnly: caller.key.access === 'read-only' }));
  });
  // Its other methods are 405 with its own Allow, before the object routes take it for an object.
  const others = notAllowed('GET');
  app.all('/api/v1/:object', (c, next) => (c.req.param('object') === DOCUMENT ? others(c) : next()));
}

import type { Hono } from 'hono';
import type { ApiDeps, AppEnv } from './types.js';
import { openApiDocument } from './openapi.js';

/** GET /api/v1/openapi.json: the description of the caller's workspace, as far as its key reaches. */
export function openApiRoute(app: Hono<AppEnv>, deps: ApiDeps): void {
  app.get('/api/v1/openapi.json', async (c) => {
    const caller = c.get('caller');
    const catalogue = await deps.catalogues.get(caller.workspaceId);
    return c.json(openApiDocument(catalogue, { canAccess: caller.canAccess, readOnly: caller.key.access === 'read-only' }));
  });
}

import type { Hono } from 'hono';
import { recordHistory } from '../../queries/history.js';
import { notAllowed } from './errors.js';
import type { ApiDeps, AppEnv } from './types.js';
import { readableObject, recordId } from './records.js';

/** GET /api/v1/{object}/{id}/history (docs/auditing.md): read access to the object is enough. */
export function historyRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  app.get('/api/v1/:object/:id/history', async (c) => {
    const object = await readableObject(c, deps);
    const caller = c.get('caller');
    const catalogue = await deps.catalogues.get(caller.workspaceId);
    const ctx = {
      workspaceId: caller.workspaceId,
      events: deps.commands.events,
      readStore: deps.readStore,
      listUsers: deps.commands.listUsers,
      canAccess: caller.canAccess,
      objectOf: (key: string) => catalogue.object(key),
    };
    return c.json(await recordHistory(ctx, object, recordId(c), c.req.queries()));
  });
  app.all('/api/v1/:object/:id/history', notAllowed('GET'));
}

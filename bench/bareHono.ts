import { serve } from '@hono/node-server';
import { Hono } from 'hono';

/** The baseline: a bare Hono JSON endpoint on the same machine, measured in the same run. */
const app = new Hono();
app.get('/json', (c) => c.json({ data: { id: '00000000-0000-4000-8000-000000000000', name: 'Acme' } }));
app.post('/json', async (c) => c.json({ created: 1, received: await c.req.json() }, 201));
const server = serve({ fetch: app.fetch, port: Number(process.env['PORT'] ?? 0), hostname: '127.0.0.1' });
process.once('SIGTERM', () => server.close(() => process.exit(0)));

// The PostgreSQL peer of `npm run bench`: the same three routes as emmettServer.mjs, written the way
// an Emmett user would write them on emmett-postgresql, with an inline projection (Emmett runs it in
// the append's transaction). The bench copies this file into .bench/peer/ beside its own
// node_modules (never the project's) and starts it there, against a fresh database of its own.
// Plain JavaScript: the project's type-check must not depend on a package only the bench installs.
//
// POST /api/v1/clients        one object: Emmett's CommandHandler (aggregate, decide, append with
//                             the inline projection in one transaction); an array (the bench's
//                             seeding): one append per record, a few at a time.
// GET  /api/v1/clients/:id    one indexed lookup in the projection's table.
// GET  /api/v1/clients?industry=&limit=&offset=   a page in creation order with its total.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';
import { CommandHandler, EmmettError, STREAM_DOES_NOT_EXIST, projections } from '@event-driven-io/emmett';
import { getPostgreSQLEventStore, postgreSQLProjection } from '@event-driven-io/emmett-postgresql';

const connectionString = process.env.PEER_DATABASE_URL;
const token = Buffer.from(`Bearer ${process.env.PEER_TOKEN ?? ''}`);
if (!connectionString || token.length <= 'Bearer '.length) throw new Error('PEER_DATABASE_URL and PEER_TOKEN are required');

// Reads (and the table's creation) on a pool of their own, as an Emmett user's read side would have.
const db = new pg.Pool({ connectionString, max: 10 });
await db.query('CREATE TABLE IF NOT EXISTS peer_clients (seq bigserial, id text PRIMARY KEY, industry_key text, data jsonb NOT NULL)');
// Filter and order from one index; the total is counted from it too.
await db.query('CREATE INDEX IF NOT EXISTS peer_clients_industry ON peer_clients (industry_key, seq)');
await db.query('CREATE INDEX IF NOT EXISTS peer_clients_seq ON peer_clients (seq)');

const clientsProjection = postgreSQLProjection({
  name: 'clients',
  canHandle: ['ClientCreated'],
  handle: async (events, { connection }) => {
    for (const { data } of events) {
      const key = typeof data.industry === 'string' ? data.industry.toLowerCase() : null;
      await connection.client.query('INSERT INTO peer_clients (id, industry_key, data) VALUES ($1, $2, $3)', [data.id, key, JSON.stringify(data)]);
    }
  },
});

const eventStore = getPostgreSQLEventStore(connectionString, { projections: projections.inline([clientsProjection]) });
await eventStore.schema.migrate();

const createClient = CommandHandler({
  evolve: (state, event) => (event.type === 'ClientCreated' ? event.data : state),
  initialState: () => null,
  mapToStreamId: (id) => `client-${id}`,
});

function clientCreated(input) {
  if (typeof input !== 'object' || input === null || typeof input.name !== 'string' || input.name.trim() === '') {
    throw new EmmettError({ errorCode: 422, message: 'name is required' });
  }
  const now = new Date().toISOString();
  const data = { id: randomUUID(), name: input.name, industry: input.industry ?? null, arr: input.arr ?? null, createdAt: now, updatedAt: now };
  return { type: 'ClientCreated', data };
}

const app = new Hono();
app.get('/', (c) => c.text('ok'));
app.use('/api/*', async (c, next) => {
  const given = Buffer.from(c.req.header('authorization') ?? '');
  if (given.length !== token.length || !timingSafeEqual(given, token)) return c.json({ error: { status: 401, message: 'unauthorized' } }, 401);
  await next();
});

app.post('/api/v1/clients', async (c) => {
  const body = await c.req.json();
  if (Array.isArray(body)) {
    const events = body.map(clientCreated);
    for (let i = 0; i < events.length; i += 8) {
      await Promise.all(
        events.slice(i, i + 8).map((event) => eventStore.appendToStream(`client-${event.data.id}`, [event], { expectedStreamVersion: STREAM_DOES_NOT_EXIST })),
      );
    }
    return c.json({ ids: events.map((event) => event.data.id) }, 201);
  }
  const event = clientCreated(body);
  await createClient(eventStore, event.data.id, (state) => {
    if (state !== null) throw new EmmettError({ errorCode: 409, message: 'exists' });
    return event;
  });
  return c.json({ data: event.data }, 201);
});

app.get('/api/v1/clients/:id', async (c) => {
  const { rows } = await db.query('SELECT data FROM peer_clients WHERE id = $1', [c.req.param('id')]);
  if (rows.length === 0) return c.json({ error: { status: 404, message: 'not found' } }, 404);
  return c.json({ data: rows[0].data });
});

app.get('/api/v1/clients', async (c) => {
  const limit = Math.min(Number(c.req.query('limit') ?? 25), 100);
  const offset = Number(c.req.query('offset') ?? 0);
  const industry = c.req.query('industry');
  const where = industry === undefined ? '' : 'WHERE industry_key = $1';
  const params = industry === undefined ? [] : [industry.toLowerCase()];
  const [page, count] = await Promise.all([
    db.query(`SELECT data FROM peer_clients ${where} ORDER BY seq LIMIT ${limit} OFFSET ${offset}`, params),
    db.query(`SELECT COUNT(*)::int AS total FROM peer_clients ${where}`, params),
  ]);
  return c.json({ data: page.rows.map((row) => row.data), total: count.rows[0].total, limit, offset });
});

app.onError((error, c) => {
  const status = EmmettError.isInstanceOf(error) ? error.errorCode : 500;
  if (status === 500) console.error(error);
  return c.json({ error: { status, message: status === 500 ? 'internal error' : error.message } }, status);
});

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' });
process.once('SIGTERM', () => server.close(async () => {
  await eventStore.close();
  await db.end();
  process.exit(0);
}));

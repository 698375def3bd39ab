// The peer of `npm run bench`: the records API's three benchmarked routes written the way an
// Emmett user would write them on emmett-sqlite, with an inline projection. The bench copies this
// file into .bench/peer/ beside its own node_modules (never the project's) and starts it there.
// Plain JavaScript: the project's type-check must not depend on a package only the bench installs.
//
// POST /api/v1/clients        one object: Emmett's CommandHandler (aggregate the stream, decide,
//                             append with the inline projection in the same transaction, fsync'd);
//                             an array (the bench's seeding): one transaction for the whole batch.
//                             Writes take turns (Emmett's InProcessLock) on one connection: with
//                             emmett-sqlite's default of a connection per operation, concurrent
//                             appends failed with SQLITE_BUSY, and on one shared connection without
//                             the lock concurrent requests join each other's transaction, so one is
//                             acknowledged before its commit.
// GET  /api/v1/clients/:id    one indexed lookup in the projection's table.
// GET  /api/v1/clients?industry=&limit=&offset=   a page in creation order with its total.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { CommandHandler, EmmettError, InProcessLock, STREAM_DOES_NOT_EXIST, projections } from '@event-driven-io/emmett';
import { appendToStream, getSQLiteEventStore, handleProjections, sqliteConnection, sqliteProjection } from '@event-driven-io/emmett-sqlite';

const fileName = process.env.PEER_DB_FILE;
const token = Buffer.from(`Bearer ${process.env.PEER_TOKEN ?? ''}`);
if (!fileName || token.length <= 'Bearer '.length) throw new Error('PEER_DB_FILE and PEER_TOKEN are required');

const clientsProjection = sqliteProjection({
  canHandle: ['ClientCreated'],
  init: async ({ context }) => {
    await context.connection.command(
      'CREATE TABLE IF NOT EXISTS clients (id TEXT PRIMARY KEY, industry_key TEXT, data TEXT NOT NULL)',
    );
    // Filter and order (rowid, the insertion order) from one index; the total is counted from it too.
    await context.connection.command('CREATE INDEX IF NOT EXISTS clients_industry ON clients (industry_key)');
  },
  handle: async (events, { connection }) => {
    for (const { data } of events) {
      const key = typeof data.industry === 'string' ? data.industry.toLowerCase() : null;
      await connection.command('INSERT INTO clients (id, industry_key, data) VALUES (?, ?, ?)', [data.id, key, JSON.stringify(data)]);
    }
  },
});

const writer = sqliteConnection({ fileName });
// sqliteConnection switches to WAL without waiting for it; a schema transaction racing that
// statement failed to commit ("SQL statements in progress") on a fresh file.
await writer.command('PRAGMA journal_mode = WAL');
const eventStore = getSQLiteEventStore({ fileName, connectionOptions: { singleton: true, connection: writer }, projections: projections.inline([clientsProjection]) });
await eventStore.schema.migrate();
const writes = InProcessLock();
const inTurn = (write) => writes.withAcquire(write, { lockId: 'writer' });
// Reads have a long-lived connection of their own (WAL: they never wait for a writer).
const db = sqliteConnection({ fileName });

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
    await inTurn(() =>
      writer.withTransaction(async () => {
        for (const event of events) {
          await appendToStream(writer, `client-${event.data.id}`, 'client', [event], {
            expectedStreamVersion: STREAM_DOES_NOT_EXIST,
            onBeforeCommit: (messages, { connection }) => handleProjections({ projections: [clientsProjection], events: messages, connection }),
          });
        }
      }),
    );
    return c.json({ ids: events.map((event) => event.data.id) }, 201);
  }
  const event = clientCreated(body);
  await inTurn(() =>
    createClient(eventStore, event.data.id, (state) => {
      if (state !== null) throw new EmmettError({ errorCode: 409, message: 'exists' });
      return event;
    }),
  );
  return c.json({ data: event.data }, 201);
});

app.get('/api/v1/clients/:id', async (c) => {
  const row = await db.querySingle('SELECT data FROM clients WHERE id = ?', [c.req.param('id')]);
  if (!row) return c.json({ error: { status: 404, message: 'not found' } }, 404);
  return c.json({ data: JSON.parse(row.data) });
});

app.get('/api/v1/clients', async (c) => {
  const limit = Math.min(Number(c.req.query('limit') ?? 25), 100);
  const offset = Number(c.req.query('offset') ?? 0);
  const industry = c.req.query('industry');
  const where = industry === undefined ? '' : 'WHERE industry_key = ?';
  const params = industry === undefined ? [] : [industry.toLowerCase()];
  const [rows, count] = await Promise.all([
    db.query(`SELECT data FROM clients ${where} ORDER BY rowid LIMIT ? OFFSET ?`, [...params, limit, offset]),
    db.querySingle(`SELECT COUNT(*) AS total FROM clients ${where}`, params),
  ]);
  return c.json({ data: rows.map((row) => JSON.parse(row.data)), total: count.total, limit, offset });
});

app.onError((error, c) => {
  const status = EmmettError.isInstanceOf(error) ? error.errorCode : 500;
  if (status === 500) console.error(error);
  return c.json({ error: { status, message: status === 500 ? 'internal error' : error.message } }, status);
});

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' });
process.once('SIGTERM', () => server.close(() => process.exit(0)));

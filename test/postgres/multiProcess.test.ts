import { afterAll, expect, it } from 'vitest';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { RECEIVER_CA_FILE, startReceiver, type Receiver } from '../support/receiver.js';
import { client, startTestService, type TestService } from '../support/service.js';
import { eventually } from '../support/until.js';
import { startRole, type RoleProcess } from './processes.js';
import { masterKeyFile } from './support.js';

/**
 * Issue 41, item 6: one PostgreSQL database and, as separate OS processes, two API processes, a
 * projector and two dispatchers. Writes through both APIs are read back at once from either;
 * the projector killed with SIGKILL is replaced and nothing is lost or applied twice; a dispatcher
 * killed with SIGKILL while holding deliveries does not lose one (each arrives at least once).
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL across processes', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);
  const processes: RoleProcess[] = [];
  let receiver: Receiver | undefined;
  let setup: TestService | undefined;
  afterAll(async () => {
    for (const role of processes) await role.kill('SIGKILL');
    await setup?.stop();
    await receiver?.close();
  });

  it('two APIs, a projector and two dispatchers: read your writes, projector and dispatcher killed with SIGKILL', async () => {
    const url = await database();
    const env = {
      DATABASE_URL: url,
      MASTER_KEY_FILE: masterKeyFile(),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_CA_FILE: RECEIVER_CA_FILE,
      WEBHOOK_RETRY_DELAYS: '1s,1s,1s,1s,1s',
    };
    // Setup as an operator's csr does it, on the same database (this process serves no role of its own).
    setup = await startTestService({ ...env, ROLES: 'api' });
    const workspace = await setup.workspace();
    const { key } = await workspace.key();
    receiver = await startReceiver();
    // Deliveries are held a moment, so a dispatcher killed now holds some in flight.
    receiver.on('/hook', () => new Promise((resolve) => setTimeout(() => resolve(204), 1_500)));
    await setup.webhooks.create(workspace.slug, { name: 'hook', url: `${receiver.origin}/hook`, events: ['created'], objects: ['clients'] });

    const start = async (roles: string) => {
      const role = await startRole(roles, env);
      processes.push(role);
      return role;
    };
    const [api1, api2, projector, dispatcher1, dispatcher2] = await Promise.all([start('api'), start('api'), start('projector'), start('dispatcher'), start('dispatcher')]);
    const apis = [client(api1.url!, key), client(api2.url!, key)];

    // Writes through both APIs, each read back at once from the other one.
    const created: string[] = [];
    const write = async (n: number) => {
      const saved = await apis[n % 2]!.post('/api/v1/clients', { name: `Client ${n}` });
      expect(saved.status, JSON.stringify(saved.body)).toBe(201);
      const id = saved.body.ids[0] as string;
      created.push(id);
      const read = await apis[(n + 1) % 2]!.get(`/api/v1/clients/${id}`);
      expect(read.status).toBe(200);
      expect(read.body.data.name).toBe(`Client ${n}`);
    };
    for (let n = 0; n < 10; n++) await write(n);

    // The projector dies with SIGKILL; another one takes over (within the lease's 6 s) and goes on.
    await projector.kill('SIGKILL');
    await start('projector');
    for (let n = 10; n < 20; n++) await write(n);

    // A dispatcher dies with SIGKILL while deliveries are in flight.
    await receiver.waitFor('/hook', (requests) => requests.length >= 1, 60_000);
    await dispatcher1.kill('SIGKILL');
    for (let n = 20; n < 25; n++) await write(n);

    // Nothing lost, nothing applied twice: each record once in the list, in both APIs.
    for (const api of apis) {
      const listed = await api.get('/api/v1/clients?limit=100');
      expect(listed.body.total).toBe(created.length);
      expect(new Set(listed.body.data.map((record: { id: string }) => record.id))).toEqual(new Set(created));
      const numbers = listed.body.data.map((record: { clientNumber: unknown }) => record.clientNumber);
      expect(new Set(numbers).size).toBe(numbers.length);
    }
    // Every record's webhook arrives at least once, though a dispatcher died holding some.
    const delivered = await eventually(
      async () => new Set(receiver!.received('/hook').map((request) => request.body?.data?.id as string)),
      (ids) => created.every((id) => ids.has(id)),
      90_000,
      'a delivery of every record',
    );
    expect(created.every((id) => delivered.has(id))).toBe(true);
    expect(dispatcher2.output()).not.toMatch(/"level":(50|60)/);
  }, 300_000);
});

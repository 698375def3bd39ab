import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/**
 * GET one and lists answer from each record's stored rendering (docs/performance-log.md, read lane):
 * what a record shows of other records, users and the object's definition must be current, never
 * what it was when the record was last written. The oracle is `?as_of=` a moment after the last
 * write, which renders from the log and never reads a stored rendering.
 */

let svc: TestService;
let ws: TestWorkspace;
let api: ReturnType<typeof client>;
let acme: string;
let ana: string;

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

/** How long background reactors may take to write, on a busy machine: asked again until then. */
const CATCH_UP_MS = 20_000;

/**
 * The body of `path`, and the body of the same path as of now: both must be the same JSON text.
 * Background reactors (health scores) may write a moment later: asked again until the read model
 * has caught up with the log, and a difference that stays fails.
 */
async function sameAsRendered(path: string): Promise<any> {
  for (const deadline = Date.now() + CATCH_UP_MS; ; ) {
    await settle();
    const now = new Date().toISOString();
    const [stored, rendered] = [await api.get(path), await api.get(`${path}${path.includes('?') ? '&' : '?'}as_of=${now}`)];
    expect(stored.status, path).toBe(200);
    if (Date.now() < deadline && JSON.stringify(stored.body) !== JSON.stringify(rendered.body)) continue;
    expect(stored.body, path).toEqual(rendered.body);
    expect(JSON.stringify(stored.body), path).toBe(JSON.stringify(rendered.body));
    return stored.body;
  }
}

beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.workspace();
  api = client(svc, (await ws.key()).key);
  ana = await ws.addUser('Ana Lima', 'ana@x.test');
  acme = (await api.post('/api/v1/clients', { name: 'Acme', health: 'Healthy', owner: ana, renewalDate: '2030-01-01', arr: 1000 })).body.ids[0];
});
afterAll(() => svc.stop());

describe('stored renderings', () => {
  it('are what the records projection stored, and GET and lists answer them as rendering the document does', async () => {
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Lina', lastName: 'Ö', client: acme })).body.ids[0];
    await api.post('/api/v1/meetings', { title: 'Sync', start: '2024-05-01T10:00:00Z', status: 'Scheduled', contacts: [contact], client: acme });
    const invoice = (await api.post('/api/v1/billing', { client: acme, status: 'Sent', issueDate: '2024-01-01', paymentTerms: 'Net 15' })).body.ids[0];
    await api.post('/api/v1/invoiceLines', { invoice, description: 'Seats', quantity: 2, unitPrice: 50 });
    await api.post('/api/v1/tasks', { subject: 'Call', client: acme, contacts: [contact], dueDate: '2024-01-01', status: 'Waiting', assignee: ana });
    for (const [object, id] of [['clients', acme], ['contacts', contact], ['billing', invoice]] as const) {
      expect((await svc.service.backends.readStore.getStored(ws.id, object, id))?.rendered, object).toEqual(expect.any(String));
      await sameAsRendered(`/api/v1/${object}/${id}`);
    }
    for (const object of ['clients', 'contacts', 'meetings', 'billing', 'invoiceLines', 'tasks']) await sameAsRendered(`/api/v1/${object}`);
    const client = await sameAsRendered(`/api/v1/clients/${acme}`);
    expect(client.data.owner).toEqual({ id: ana, name: 'Ana Lima' });
    expect(client.data.daysToRenewal).toEqual(expect.any(Number));
  });

  it('show a linked record renamed since, its looked-up values changed since, and its deletion', async () => {
    const beta = (await api.post('/api/v1/clients', { name: 'Beta', health: 'Healthy' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Bo', client: beta })).body.ids[0];
    const meeting = (await api.post('/api/v1/meetings', { title: 'Kickoff', start: '2024-05-01T10:00:00Z', status: 'Scheduled', contacts: [contact] })).body.ids[0];
    await api.patch(`/api/v1/clients/${beta}`, { name: 'Beta Renamed', health: 'Critical' });
    await api.patch(`/api/v1/contacts/${contact}`, { lastName: 'Berg' });

    const one = await sameAsRendered(`/api/v1/contacts/${contact}`);
    expect(one.data.client).toEqual({ id: beta, name: 'Beta Renamed' });
    expect(one.data.clientHealth).toBe('Critical');
    const page = await sameAsRendered(`/api/v1/contacts?client=${beta}`);
    expect(page.data.map((record: any) => [record.client.name, record.clientHealth])).toEqual([['Beta Renamed', 'Critical']]);
    expect((await sameAsRendered(`/api/v1/meetings/${meeting}`)).data.contacts).toEqual([{ id: contact, name: 'Bo Berg' }]);

    expect((await api.delete(`/api/v1/meetings/${meeting}`)).status).toBe(200);
    const gone = (await api.post('/api/v1/contacts', { firstName: 'Gone' })).body.ids[0];
    const left = (await api.post('/api/v1/meetings', { title: 'Left', start: '2024-05-01T10:00:00Z', status: 'Scheduled', contacts: [gone] })).body.ids[0];
    expect((await api.delete(`/api/v1/contacts/${gone}`)).status).toBe(200);
    expect((await api.get(`/api/v1/meetings/${left}`)).body.data.contacts).toEqual([{ id: gone, name: null }]);
  });

  it('show a field added to the object after they were stored, and its values once written', async () => {
    const before = (await api.post('/api/v1/clients', { name: 'Before Segment' })).body.ids[0];
    await svc.objects.addField(ws.slug, 'clients', 'segment', { format: 'oneOf', options: ['Tech', 'Retail'] });
    const one = await sameAsRendered(`/api/v1/clients/${before}`);
    expect(one.data).toHaveProperty('segment', null);
    expect((await sameAsRendered('/api/v1/clients')).data.every((record: any) => 'segment' in record)).toBe(true);
    await api.patch(`/api/v1/clients/${before}`, { segment: 'Tech' });
    expect((await sameAsRendered(`/api/v1/clients/${before}`)).data.segment).toBe('Tech');
    expect((await sameAsRendered('/api/v1/clients?segment=tech')).data.map((record: any) => record.id)).toEqual([before]);
  });

  it('mask links for a key limited to some objects, in GET one and in lists', async () => {
    const limited = client(svc, (await ws.key({ objects: ['contacts'] })).key);
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Masked', client: acme })).body.ids[0];
    expect((await limited.get(`/api/v1/contacts/${contact}`)).body.data.client).toEqual({ id: acme });
    const page = (await limited.get(`/api/v1/contacts?client=${acme}`)).body.data;
    expect(page.length).toBeGreaterThan(0);
    for (const record of page) expect(record.client).toEqual({ id: acme });
  });

  it('answer the same from a store that can only answer asynchronously (as the MongoDB one)', async () => {
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Async', client: acme })).body.ids[0];
    const paths = [`/api/v1/clients/${acme}`, `/api/v1/contacts/${contact}`, `/api/v1/contacts/${acme}`];
    const readStore = svc.service.backends.readStore;
    const answerNow = readStore.getStoredNow;
    let asked = 0;
    const answers = async (now: boolean) => {
      readStore.getStoredNow = now
        ? answerNow
        : () => {
            asked++;
            return undefined;
          };
      try {
        return (await Promise.all(paths.map((path) => api.get(path)))).map((response) => [response.status, response.body]);
      } finally {
        readStore.getStoredNow = answerNow;
      }
    };
    // Background reactors (health scores) may write between the two: asked again until they agree.
    for (const deadline = Date.now() + CATCH_UP_MS; ; ) {
      await settle();
      const [direct, waited] = [await answers(true), await answers(false)];
      if (Date.now() < deadline && JSON.stringify(direct) !== JSON.stringify(waited)) continue;
      expect(waited).toEqual(direct);
      expect(direct.map(([status]) => status)).toEqual([200, 200, 404]);
      break;
    }
    expect(asked).toBeGreaterThanOrEqual(3);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceStream } from '../../src/events/workspace.js';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/**
 * Workspace-defined objects and fields (issue 25) through the public HTTP surface: the API serves
 * them exactly like the default ones. Every answer is also checked against the OpenAPI document.
 */

let svc: TestService;
let ws: TestWorkspace;
let api: ReturnType<typeof client>;
let userId: string;

const OBJECT = 'onboardingProjects';

beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.workspace();
  api = client(svc, (await ws.key()).key);
  userId = await ws.addUser('Ana Lima', 'ana@x.test');
  await svc.objects.createObject(ws.slug, OBJECT, { name: 'Onboarding Projects' });
  const add = (key: string, format: string, extra: Record<string, unknown> = {}) => svc.objects.addField(ws.slug, OBJECT, key, { format, ...extra });
  await add('summary', 'Text', { personal: true });
  await add('budget', 'Number (USD)');
  await add('seats', 'number');
  await add('kickoff', 'Date');
  await add('goLive', 'Date and time');
  await add('active', 'boolean');
  await add('contactEmail', 'Email address');
  await add('site', 'Web address');
  await add('phase', 'One of', { options: ['Plan', 'Build', 'Live'] });
  await add('client', 'link', { linkTo: 'clients' });
  await add('contacts', 'linkList', { linkTo: 'contacts' });
  await add('owner', 'person');
  await add('code', 'autoNumber', { prefix: 'OP-' });
});

afterAll(async () => {
  await svc?.stop();
});

describe('a workspace-defined object', () => {
  it('takes and returns one field of every format, numbers itself and is listed', async () => {
    const globex = await api.post('/api/v1/clients', { name: 'Globex' });
    const ann = await api.post('/api/v1/contacts', { firstName: 'Ann', lastName: 'Lee' });
    const saved = await api.post(`/api/v1/${OBJECT}`, {
      name: 'Globex rollout',
      summary: 'Kick off in May',
      budget: 12000.5,
      seats: 40,
      kickoff: '2024-05-01',
      goLive: '2024-06-01T09:30:00+02:00',
      active: true,
      contactEmail: 'ops@globex.test',
      site: 'https://globex.test/onboarding',
      phase: 'Build',
      client: 'globex',
      contacts: [{ id: ann.body.ids[0] }],
      owner: 'ana@x.test',
    });
    expect(saved.status).toBe(201);
    const got = await api.get(`/api/v1/${OBJECT}/${saved.body.ids[0]}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({
      id: saved.body.ids[0],
      name: 'Globex rollout',
      summary: 'Kick off in May',
      budget: 12000.5,
      seats: 40,
      kickoff: '2024-05-01',
      goLive: '2024-06-01T07:30:00.000Z',
      active: true,
      contactEmail: 'ops@globex.test',
      site: 'https://globex.test/onboarding',
      phase: 'Build',
      client: { id: globex.body.ids[0], name: 'Globex' },
      contacts: [{ id: ann.body.ids[0], name: 'Ann Lee' }],
      owner: { id: userId, name: 'Ana Lima' },
      code: 'OP-00001',
    });
    for (const query of ['phase=build', `client=${globex.body.ids[0]}`, 'seats=40.0', 'active=TRUE', 'kickoff=2024-05-01', 'code=op-00001', `contacts=${ann.body.ids[0]}`]) {
      const list = await api.get(`/api/v1/${OBJECT}?${query}`);
      expect(list.status, query).toBe(200);
      expect(list.body.data.map((record: { id: string }) => record.id), query).toEqual([saved.body.ids[0]]);
    }
    expect((await api.get(`/api/v1/${OBJECT}?phase=Live`)).body.total).toBe(0);
    expect((await api.get(`/api/v1/${OBJECT}?phase=Gold`)).status).toBe(422);
  });

  it('matches by its record name, then by its auto number, and patches and deletes', async () => {
    const first = await api.post(`/api/v1/${OBJECT}`, { name: 'Initech setup', seats: 5 });
    expect(first.status).toBe(201);
    const byName = await api.post(`/api/v1/${OBJECT}`, { name: 'INITECH SETUP', seats: 6 });
    expect(byName.status).toBe(200);
    expect(byName.body.ids).toEqual(first.body.ids);
    const code = (await api.get(`/api/v1/${OBJECT}/${first.body.ids[0]}`)).body.data.code as string;
    const byNumber = await api.post(`/api/v1/${OBJECT}`, { code, name: 'Initech setup, phase 2' });
    expect(byNumber.status).toBe(200);
    expect(byNumber.body.ids).toEqual(first.body.ids);
    const patched = await api.patch(`/api/v1/${OBJECT}/${first.body.ids[0]}`, { phase: 'Live' });
    expect(patched.body.data).toMatchObject({ name: 'Initech setup, phase 2', seats: 6, phase: 'Live' });
    expect((await api.delete(`/api/v1/${OBJECT}/${first.body.ids[0]}`)).body).toEqual({ deleted: first.body.ids[0] });
    expect((await api.get(`/api/v1/${OBJECT}/${first.body.ids[0]}`)).status).toBe(404);
  });

  it('is unknown to other workspaces', async () => {
    const other = await svc.workspace();
    const otherApi = client(svc, (await other.key()).key);
    expect((await otherApi.get(`/api/v1/${OBJECT}`)).status).toBe(404);
  });
});

describe('workspace-defined fields on a default object', () => {
  it('are written, filtered and linked both ways, masked for keys that cannot reach the other object', async () => {
    await svc.objects.addField(ws.slug, 'clients', 'segment', { format: 'oneOf', options: ['Tech', 'Retail'] });
    await svc.objects.addField(ws.slug, 'clients', 'project', { format: 'link', linkTo: OBJECT });
    const project = await api.post(`/api/v1/${OBJECT}`, { name: 'Umbrella onboarding' });
    const saved = await api.post('/api/v1/clients', { name: 'Umbrella', segment: 'Retail', project: 'umbrella onboarding' });
    expect(saved.status).toBe(201);
    const clientId = saved.body.ids[0];
    await api.patch(`/api/v1/${OBJECT}/${project.body.ids[0]}`, { client: clientId });

    const list = await api.get('/api/v1/clients?segment=retail');
    expect(list.body.data.map((record: { id: string }) => record.id)).toEqual([clientId]);
    expect(list.body.data[0].project).toEqual({ id: project.body.ids[0], name: 'Umbrella onboarding' });
    expect((await api.get(`/api/v1/clients?project=${project.body.ids[0]}`)).body.total).toBe(1);
    expect((await api.get(`/api/v1/${OBJECT}/${project.body.ids[0]}`)).body.data.client).toEqual({ id: clientId, name: 'Umbrella' });

    const clientsOnly = client(svc, (await ws.key({ objects: ['clients'] })).key);
    expect((await clientsOnly.get(`/api/v1/clients/${clientId}`)).body.data.project).toEqual({ id: project.body.ids[0] });
    expect((await clientsOnly.get(`/api/v1/${OBJECT}`)).status).toBe(403);
    const projectsOnly = client(svc, (await ws.key({ objects: [OBJECT] })).key);
    expect((await projectsOnly.get(`/api/v1/${OBJECT}/${project.body.ids[0]}`)).body.data.client).toEqual({ id: clientId });
    expect((await projectsOnly.get('/api/v1/clients')).status).toBe(403);
  });

  it('a required field added later applies to writes from then on', async () => {
    const before = await api.post('/api/v1/clients', { name: 'Before region' });
    await svc.objects.addField(ws.slug, 'clients', 'region', { format: 'text', required: true });
    expect((await api.patch(`/api/v1/clients/${before.body.ids[0]}`, { industry: 'Retail' })).status).toBe(200);
    const missing = await api.post('/api/v1/clients', { name: 'After region' });
    expect(missing.status).toBe(422);
    expect(missing.body.errors[0].message).toContain('region is required');
    expect((await api.post('/api/v1/clients', { name: 'After region', region: 'EMEA' })).status).toBe(201);
    expect((await api.patch(`/api/v1/clients/${before.body.ids[0]}`, { region: null })).status).toBe(422);
  });
});

describe('deactivating a field', () => {
  it('takes it out of the API and the description, refuses writes naming it, and reactivating brings its values back', async () => {
    await svc.objects.addField(ws.slug, 'contacts', 'shoeSize', { format: 'number' });
    const saved = await api.post('/api/v1/contacts', { firstName: 'Deac', shoeSize: 42 });
    const id = saved.body.ids[0];
    await svc.objects.setActive(ws.slug, 'contacts', 'shoeSize', false);

    expect((await api.get(`/api/v1/contacts/${id}`)).body.data).not.toHaveProperty('shoeSize');
    const write = await api.patch(`/api/v1/contacts/${id}`, { shoeSize: 43 });
    expect(write.status).toBe(422);
    expect(write.body.error.message).toContain("'shoeSize'");
    expect(write.body.error.message).toContain('deactivated');
    expect((await api.get('/api/v1/contacts?shoeSize=42')).status).toBe(422);
    const document = (await api.get('/api/v1/openapi.json')).body;
    expect(document.components.schemas.Contacts.properties).not.toHaveProperty('shoeSize');

    await svc.objects.setActive(ws.slug, 'contacts', 'shoeSize', true);
    expect((await api.get(`/api/v1/contacts/${id}`)).body.data.shoeSize).toBe(42);
    expect((await api.get('/api/v1/contacts?shoeSize=42')).body.total).toBe(1);
  });
});

describe('schema changes are events', () => {
  it('each is in the workspace stream with its actor, in order', async () => {
    const events = await svc.service.backends.events.readStream(workspaceStream(ws.id));
    const schema = events.filter((event) => ['ObjectCreated', 'FieldAdded', 'FieldDeactivated', 'FieldReactivated'].includes(event.type));
    expect(schema[0]).toMatchObject({ type: 'ObjectCreated', data: { key: OBJECT, label: 'Onboarding Projects' }, metadata: { actor: { type: 'user', name: 'csr' } } });
    expect(schema.map((event) => `${event.type} ${event.data['object'] ?? event.data['key']}.${(event.data['field'] as { key?: string })?.key ?? event.data['key']}`)).toContain(
      'FieldDeactivated contacts.shoeSize',
    );
  });
});

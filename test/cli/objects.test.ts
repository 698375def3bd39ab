import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool, type Csr } from '../support/cli.js';
import { client, startTestService, type TestService } from '../support/service.js';
import { eventually } from '../support/until.js';

/**
 * `csr objects`, `csr fields` and `csr openapi` as an operator runs them, against the data
 * directory of a running service: the service sees each change (the API process follows the
 * log; a change is seen within one poll of it).
 */

let svc: TestService;
let csr: Csr;
let slug: string;

beforeAll(async () => {
  svc = await startTestService();
  csr = csrTool(svc.dataDir);
  slug = `acme-${randomUUID().slice(0, 8)}`;
  await csr.json('workspaces', 'create', slug);
});

afterAll(async () => {
  await svc?.stop();
});

/** Looked for up to 30 s: one poll of the log watch on a quiet machine, more on a loaded one. */
const seen = (check: () => Promise<boolean>, what: string) => eventually(check, (yes) => yes, 30_000, what);

describe('csr objects and csr fields', () => {
  it('create an object, add fields of each kind, list them with their marks', async () => {
    const created = await csr.json('objects', 'create', '--workspace', slug, 'onboardingProjects', '--name', 'Onboarding Projects', '--record-name', 'title');
    expect(created).toEqual({ key: 'onboardingProjects', label: 'Onboarding Projects', custom: true, fields: 1, recordName: ['title'] });
    expect(await csr.json('fields', 'add', '--workspace', slug, 'onboardingProjects', 'stage', '--format', 'One of', '--options', 'Plan, Build,Live', '--required')).toMatchObject({
      key: 'stage',
      format: 'One of: Plan, Build, Live',
      required: true,
      custom: true,
    });
    await csr.json('fields', 'add', '--workspace', slug, 'onboardingProjects', 'champion', '--format', 'email', '--personal', '--label', 'Champion email');
    await csr.json('fields', 'add', '--workspace', slug, 'onboardingProjects', 'number', '--format', 'autoNumber', '--prefix', 'OB-');
    await csr.json('fields', 'add', '--workspace', slug, 'onboardingProjects', 'client', '--format', 'link', '--link-to', 'clients');
    await csr.json('fields', 'add', '--workspace', slug, 'clients', 'budget', '--format', 'Number (USD)');

    const fields = await csr.json<Record<string, unknown>[]>('fields', 'list', '--workspace', slug, 'onboardingProjects');
    expect(fields.map((field) => [field['key'], field['format'], field['personal']])).toEqual([
      ['title', 'Text', false],
      ['stage', 'One of: Plan, Build, Live', false],
      ['champion', 'Email address', true],
      ['number', 'Auto number', false],
      ['client', 'Link to clients', false],
    ]);
    // An auto number's prefix is listed (issue 39 item 8), in --json and in the text form; other fields have none.
    expect(fields.find((field) => field['key'] === 'number')).toMatchObject({ prefix: 'OB-' });
    expect(fields.filter((field) => 'prefix' in field).map((field) => field['key'])).toEqual(['number']);
    const listed = await csr.run('fields', 'list', '--workspace', slug, 'onboardingProjects');
    expect(listed.stdout).toMatch(/^key: +number\n(.+\n)*prefix: +OB-$/m);
    const contacts = await csr.json<Record<string, unknown>[]>('fields', 'list', '--workspace', slug, 'contacts');
    expect(contacts.filter((field) => field['personal']).map((field) => field['key'])).toEqual(['firstName', 'lastName', 'email', 'phone', 'notes']);
    const objects = await csr.json<Record<string, unknown>[]>('objects', 'list', '--workspace', slug);
    expect(objects).toHaveLength(19);
    expect(objects.find((object) => object['key'] === 'clients')).toMatchObject({ custom: false, fields: 15 });
    expect(objects.at(-1)).toMatchObject({ key: 'onboardingProjects', custom: true, fields: 5 });
    expect(await csr.run('fields', 'list', '--workspace', slug, 'contacts')).toMatchObject({ code: 0, stdout: expect.stringContaining('personal:') });
  });

  it('refuse bad keys, clashes, unknown formats and targets, and misplaced options, with a clear message', async () => {
    const add = (...args: string[]) => csr.fails(1, 'fields', 'add', '--workspace', slug, ...args);
    expect(await csr.fails(1, 'objects', 'create', '--workspace', slug, 'clients', '--name', 'Mine')).toContain('taken by a default object');
    expect(await csr.fails(1, 'objects', 'create', '--workspace', slug, 'Bad-Key', '--name', 'Bad')).toContain('must start with a lowercase letter');
    expect(await add('clients', 'tier', '--format', 'text')).toContain('already has a default field "tier"');
    expect(await add('clients', 'x'.repeat(41), '--format', 'text')).toContain('1 to 40 letters and digits');
    expect(await add('clients', 'createdAt', '--format', 'text')).toContain('reserved');
    expect(await add('clients', 'colour', '--format', 'Colour')).toContain('unknown format "Colour"');
    expect(await add('clients', 'colour', '--format', 'text', '--options', 'Red,Blue')).toContain('--options applies only to oneOf fields');
    expect(await add('clients', 'partner', '--format', 'link', '--link-to', 'partners')).toContain('unknown object "partners"');
    expect(await add('nowhere', 'colour', '--format', 'text')).toContain('unknown object "nowhere"');
    expect(await add('clients', 'code', '--format', 'autoNumber', '--prefix', 'X-')).toContain('already has an auto number');
    expect(await csr.fails(1, 'fields', 'deactivate', '--workspace', slug, 'clients', 'tier')).toContain('default fields cannot be changed');
  });

  it('deactivate hides a field from the running API within a poll of the log, reactivate brings its values back, and the key is never reused', async () => {
    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'sync');
    const api = client(svc, key);
    const saved = await api.post('/api/v1/clients', { name: 'Budgeted', budget: 5000 });
    expect(saved.status).toBe(201);
    const id = saved.body.ids[0] as string;

    expect(await csr.json('fields', 'deactivate', '--workspace', slug, 'clients', 'budget')).toMatchObject({ key: 'budget', active: false });
    await seen(async () => !('budget' in (await api.get(`/api/v1/clients/${id}`)).body.data), 'the deactivation');
    const listed = await csr.json<Record<string, unknown>[]>('fields', 'list', '--workspace', slug, 'clients');
    expect(listed.find((field) => field['key'] === 'budget')).toMatchObject({ active: false });
    expect(await csr.fails(1, 'fields', 'add', '--workspace', slug, 'clients', 'budget', '--format', 'text')).toContain('not reused');

    await csr.json('fields', 'reactivate', '--workspace', slug, 'clients', 'budget');
    await seen(async () => (await api.get(`/api/v1/clients/${id}`)).body.data.budget === 5000, 'the reactivation');
  });

  it('keys may be limited to workspace-defined objects; label and option changes are seen', async () => {
    const limited = await csr.json<{ key: string; objects: string[] }>('keys', 'create', '--workspace', slug, '--name', 'projects', '--objects', 'onboardingProjects');
    expect(limited.objects).toEqual(['onboardingProjects']);
    const api = client(svc, limited.key);
    expect((await api.get('/api/v1/clients')).status).toBe(403);
    expect((await api.post('/api/v1/onboardingProjects', { title: 'Kickoff', stage: 'Plan' })).status).toBe(201);
    expect((await api.post('/api/v1/onboardingProjects', { title: 'Later', stage: 'Hold' })).status).toBe(422);
    await csr.json('fields', 'add-option', '--workspace', slug, 'onboardingProjects', 'stage', 'Hold');
    // A new value is no unknown key: the API sees it once its log watch has (one poll).
    await seen(async () => (await api.post('/api/v1/onboardingProjects', { title: 'Later', stage: 'Hold' })).status === 201, 'the new option');
    expect(await csr.json('fields', 'label', '--workspace', slug, 'onboardingProjects', 'stage', '--label', 'Phase')).toMatchObject({ label: 'Phase' });
  });

  it('every schema change is in the audit export, in log order, with its actor', async () => {
    const exported = await csr.run('audit', 'export', '--workspace', slug);
    expect(exported.code).toBe(0);
    const events = exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; actor: { type: string; name: string }; data: Record<string, any> });
    const schema = events.filter((event) => ['ObjectCreated', 'FieldAdded', 'FieldLabelChanged', 'FieldOptionAdded', 'FieldDeactivated', 'FieldReactivated'].includes(event.type));
    expect(schema[0]).toMatchObject({ type: 'ObjectCreated', data: { key: 'onboardingProjects' } });
    expect(schema.map((event) => event.type)).toEqual(expect.arrayContaining(['FieldAdded', 'FieldDeactivated', 'FieldReactivated']));
    for (const event of schema) expect(event.actor).toMatchObject({ type: 'user' });
  });

  it('csr openapi prints the valid description of the whole workspace', async () => {
    const document = await csr.json<Record<string, any>>('openapi', '--workspace', slug);
    expect(document['info'].version).toBe('1.0.0');
    expect(document['paths']).toHaveProperty(['/api/v1/onboardingProjects']);
    expect(document['components'].schemas.OnboardingProjects.properties.champion['x-personal-data']).toBe(true);
    expect((await new Validator().validate(document)).valid).toBe(true);
    expect(await csr.fails(1, 'openapi', '--workspace', 'nope')).toContain('workspace "nope" not found');
  });
});

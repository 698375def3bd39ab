import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResponse } from '../support/openapi.js';
import { client, startTestService, type TestService, type TestWorkspace } from '../support/service.js';

/**
 * The OpenAPI 3.1 description (spec 9, issue 25): generated from the workspace's catalogue,
 * valid for a maintained validator, scoped to the caller's key, and strict enough that the
 * response checker of every HTTP test catches an answer that does not fit it.
 */

let svc: TestService;
let ws: TestWorkspace;
let api: ReturnType<typeof client>;
let document: any;

beforeAll(async () => {
  svc = await startTestService();
  ws = await svc.workspace();
  api = client(svc, (await ws.key()).key);
  await svc.objects.createObject(ws.slug, 'renewalRisks', { name: 'Renewal risks', recordName: 'title' });
  await svc.objects.addField(ws.slug, 'renewalRisks', 'level', { format: 'oneOf', options: ['Low', 'High'] });
  await svc.objects.addField(ws.slug, 'renewalRisks', 'client', { format: 'link', linkTo: 'clients' });
  await svc.objects.addField(ws.slug, 'renewalRisks', 'raisedBy', { format: 'email', personal: true });
  await svc.objects.addField(ws.slug, 'renewalRisks', 'due', { format: 'date' });
  await svc.objects.addField(ws.slug, 'renewalRisks', 'ref', { format: 'autoNumber', prefix: 'RR-' });
  const answer = await api.get('/api/v1/openapi.json');
  expect(answer.status).toBe(200);
  document = answer.body;
});

afterAll(async () => {
  await svc?.stop();
});

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 for @seriousme/openapi-schema-validator, version 1.0.0', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0.0');
    expect(document.components.securitySchemes.bearer).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
  });

  it('documents the change feed with a sync loop, conditional requests (ETag, If-Match, 412, 304) and rate limits (429 and its headers)', () => {
    const feed = document.paths['/api/v1/events'].get;
    expect(feed.description).toMatch(/A sync loop: .*after=<stored cursor>.*apply the items in order.*only then store "next" as the cursor.*hasMore/);
    expect(feed.parameters.map((parameter: { $ref?: string; name?: string }) => parameter.name)).toEqual(['after', 'limit', 'objects', 'types', 'wait']);
    expect(Object.keys(feed.responses)).toEqual(expect.arrayContaining(['200', '410', '429']));
    const one = document.paths['/api/v1/clients/{id}'];
    expect(one.get.responses['304']).toMatchObject({ headers: { ETag: { $ref: '#/components/headers/ETag' } } });
    expect(one.get.parameters).toContainEqual({ $ref: '#/components/parameters/If-None-Match' });
    for (const method of ['patch', 'delete']) {
      expect(one[method].parameters).toContainEqual({ $ref: '#/components/parameters/If-Match' });
      expect(one[method].responses['412']).toEqual({ $ref: '#/components/responses/412' });
    }
    expect(document.components.responses['412'].headers).toEqual({ ETag: { $ref: '#/components/headers/ETag' } });
    expect(document.components.responses['429'].headers).toEqual({
      'Retry-After': { $ref: '#/components/headers/Retry-After' },
      'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
      RateLimit: { $ref: '#/components/headers/RateLimit' },
    });
  });

  it('describes every object, with formats, enums, read-only and personal fields, and every parameter', () => {
    for (const key of ['clients', 'contacts', 'billing', 'opportunities', 'renewalRisks']) {
      expect(document.paths[`/api/v1/${key}`]).toHaveProperty('get');
      expect(document.paths[`/api/v1/${key}`]).toHaveProperty('post');
      expect(Object.keys(document.paths[`/api/v1/${key}/{id}`]).sort()).toEqual(['delete', 'get', 'parameters', 'patch']);
    }
    const clients = document.components.schemas.Clients.properties;
    expect(clients.renewalDate).toMatchObject({ type: ['string', 'null'], format: 'date' });
    expect(clients.website).toMatchObject({ format: 'uri' });
    expect(clients.tier.enum).toEqual(['Enterprise', 'Mid-Market', 'SMB', null]);
    expect(clients.openBalance.readOnly).toBe(true);
    expect(clients.healthScore.readOnly).toBe(true);
    expect(document.components.schemas.Contacts.properties.email).toMatchObject({ format: 'email', 'x-personal-data': true });
    expect(document.components.schemas.Conversations.properties.date).toMatchObject({ format: 'date-time' });
    const risks = document.components.schemas.RenewalRisks.properties;
    expect(risks.raisedBy['x-personal-data']).toBe(true);
    expect(risks.level.enum).toEqual(['Low', 'High', null]);
    expect(document.components.schemas.RenewalRisksInput.properties).not.toHaveProperty('createdAt');

    const list = document.paths['/api/v1/renewalRisks'].get;
    const names = list.parameters.map((parameter: { $ref?: string; name?: string }) => parameter.name ?? parameter.$ref!.split('/').pop());
    expect(names).toEqual(expect.arrayContaining(['limit', 'offset', 'updated_since', 'title', 'level', 'client', 'raisedBy', 'due', 'ref']));
    expect(document.paths['/api/v1/renewalRisks'].post.parameters.map((parameter: { $ref: string }) => parameter.$ref.split('/').pop())).toContain('match');
    expect(Object.keys(list.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '404', '422']));
    expect(document.paths['/api/v1/clients/{id}'].delete.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Deleted' });
  });

  it('describes each webhook event kind, bulk ones included, with its headers', () => {
    for (const event of ['renewalRisks.created', 'renewalRisks.updated', 'renewalRisks.deleted', 'renewalRisks.created.bulk', 'clients.deleted.bulk', 'webhook.test']) {
      expect(document.webhooks, event).toHaveProperty([event]);
    }
    const created = document.webhooks['renewalRisks.created'].post;
    expect(created.parameters.map((header: { name: string }) => header.name)).toEqual(['X-SVC-Event', 'X-SVC-Delivery', 'X-SVC-Timestamp', 'X-SVC-Signature']);
    expect(created.requestBody.content['application/json'].schema.properties.data).toEqual({ $ref: '#/components/schemas/RenewalRisks' });
  });

  it("describes only what the caller's key may reach, and nothing to write for a read-only key", async () => {
    const limited = await client(svc, (await ws.key({ objects: ['renewalRisks'], readOnly: true })).key).get('/api/v1/openapi.json');
    expect(limited.status).toBe(200);
    expect(Object.keys(limited.body.paths).filter((path) => path.split('/').length === 4).sort()).toEqual(['/api/v1/events', '/api/v1/openapi.json', '/api/v1/renewalRisks']);
    expect(limited.body.paths['/api/v1/renewalRisks']).not.toHaveProperty('post');
    expect(limited.body.components.schemas.RenewalRisks.properties.client).toEqual(expect.objectContaining({ anyOf: [{ $ref: '#/components/schemas/LinkId' }, { type: 'null' }] }));
    expect((await new Validator().validate(limited.body)).valid).toBe(true);
    expect((await client(svc, null).get('/api/v1/openapi.json')).status).toBe(401);
  });
});

describe('the response checker of the HTTP tests', () => {
  it('refuses answers that do not fit the description', async () => {
    const { key } = await ws.key();
    const origin = { target: svc, send: async (path: string, init: RequestInit) => svc.service.app!.request(path, init) };
    const record = { id: '0190f5a2-0000-7000-8000-000000000001', title: 'x', level: 'Medium', client: null, raisedBy: null, due: null, ref: null, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-01T00:00:00.000Z' };
    const one = (data: unknown) => checkResponse(origin, key, 'GET', `/api/v1/renewalRisks/${record.id}`, 200, { data });
    await expect(one(record)).rejects.toThrow(/does not match/);
    await expect(one({ ...record, level: 'Low' })).resolves.toBeUndefined();
    await expect(one({ ...record, level: 'Low', extra: 1 })).rejects.toThrow(/does not match/);
    await expect(one({ ...record, level: 'Low', due: '01/02/2024' })).rejects.toThrow(/does not match/);
    await expect(checkResponse(origin, key, 'GET', '/api/v1/renewalRisks', 200, { data: [], total: 0 })).rejects.toThrow(/does not match/);
    await expect(checkResponse(origin, key, 'GET', '/api/v1/renewalRisks', 404, { message: 'x' })).rejects.toThrow(/does not match/);
    await expect(checkResponse(origin, key, 'PUT', '/api/v1/renewalRisks', 200, {})).rejects.toThrow(/does not describe/);
  });
});

describe('a typed client generated with openapi-typescript', () => {
  it('type-checks a small example, and refuses a wrong one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'csr-openapi-ts-'));
    try {
      writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(document)));
      const example = (body: string) => `import type { paths, components } from './api';
type Risk = components['schemas']['RenewalRisks'];
type ListAnswer = paths['/api/v1/renewalRisks']['get']['responses']['200']['content']['application/json'];
type NewRisk = paths['/api/v1/renewalRisks']['post']['requestBody']['content']['application/json'];
${body}
`;
      const good = example(`const page: ListAnswer = { data: [], total: 0, limit: 100, offset: 0 };
const risk: NewRisk = { title: 'Champion left', level: 'High', client: 'Globex', due: '2024-05-01' };
const level: Risk['level'] = 'Low';
export { page, risk, level };`);
      const bad = example(`const level: Risk['level'] = 'Medium';
export { level };`);
      writeFileSync(join(dir, 'good.ts'), good);
      writeFileSync(join(dir, 'bad.ts'), bad);
      const program = ts.createProgram([join(dir, 'good.ts'), join(dir, 'bad.ts')], {
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
      });
      const diagnostics = (file: string) =>
        ts.getPreEmitDiagnostics(program, program.getSourceFile(join(dir, file))).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      expect(diagnostics('good.ts')).toEqual([]);
      expect(diagnostics('bad.ts').join('\n')).toMatch(/"Medium"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

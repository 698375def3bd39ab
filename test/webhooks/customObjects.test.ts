import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookPayloadProblem } from '../support/openapi.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';

/** Webhooks of a workspace-defined object: `<customKey>.created` and friends, bulk included. */

let h: WebhookHarness;

beforeAll(async () => {
  h = await startWebhookHarness();
  await h.svc.objects.createObject(h.ws.slug, 'onboardingProjects', { name: 'Onboarding Projects' });
  await h.svc.objects.addField(h.ws.slug, 'onboardingProjects', 'phase', { format: 'oneOf', options: ['Plan', 'Live'] });
  await h.svc.objects.addField(h.ws.slug, 'onboardingProjects', 'client', { format: 'link', linkTo: 'clients' });
});

afterAll(async () => {
  await h?.close();
});

describe('webhooks of a workspace-defined object', () => {
  it('send <key>.created, .updated and .deleted with the record in the REST format', async () => {
    const hook = await h.hook('/projects', { objects: ['onboardingProjects'] });
    expect(hook.webhook.objects).toEqual(['onboardingProjects']);
    const globex = await h.api.post('/api/v1/clients', { name: 'Globex' });
    const saved = await h.api.post('/api/v1/onboardingProjects', { name: 'Globex rollout', phase: 'Plan', client: globex.body.ids[0] });
    const id = saved.body.ids[0] as string;
    await h.api.patch(`/api/v1/onboardingProjects/${id}`, { phase: 'Live' });
    await h.api.delete(`/api/v1/onboardingProjects/${id}`);
    const requests = await h.receiver.waitFor('/projects', (all) => all.length === 3);
    const byEvent = new Map(requests.map((request) => [request.body.event as string, request]));
    expect([...byEvent.keys()].sort()).toEqual(['onboardingProjects.created', 'onboardingProjects.deleted', 'onboardingProjects.updated']);
    const created = byEvent.get('onboardingProjects.created')!;
    expect(created.headers['x-svc-event']).toBe('onboardingProjects.created');
    expect(created.body).toMatchObject({ object: 'onboardingProjects', source: 'api' });
    expect(created.body.data).toEqual({
      id,
      name: 'Globex rollout',
      phase: expect.any(String),
      client: { id: globex.body.ids[0], name: 'Globex' },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(byEvent.get('onboardingProjects.deleted')!.body.data).toMatchObject({ id, phase: 'Live' });
    const document = (await h.api.get('/api/v1/openapi.json')).body;
    for (const request of requests) expect(webhookPayloadProblem(document, request.body)).toBeNull();
    expect(webhookPayloadProblem(document, { ...created.body, data: { ...created.body.data, phase: 'Gone' } })).toMatch(/must be equal to one of the allowed values/);
  });

  it('send a bulk event when one request saves more than 20 records', async () => {
    await h.hook('/projects-bulk', { objects: ['onboardingProjects'] });
    const saved = await h.api.post('/api/v1/onboardingProjects', Array.from({ length: 21 }, (_, i) => ({ name: `Bulk ${i}` })));
    expect(saved.status).toBe(201);
    const [bulk] = await h.receiver.waitFor('/projects-bulk', (all) => all.length === 1);
    expect(bulk!.body).toMatchObject({ event: 'onboardingProjects.created.bulk', object: 'onboardingProjects', data: { count: 21 } });
    expect(new Set(bulk!.body.data.ids)).toEqual(new Set(saved.body.ids));
    expect(webhookPayloadProblem((await h.api.get('/api/v1/openapi.json')).body, bulk!.body)).toBeNull();
  });
});

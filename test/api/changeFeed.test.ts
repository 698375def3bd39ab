import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client, type ApiClient } from '../support/service.js';
import { feedMirror, mirrorScenario, type FeedItem } from '../support/feedMirror.js';
import { RECEIVER_CA_FILE, startReceiver, type Receiver } from '../support/receiver.js';
import { eventually, until } from '../support/until.js';

/**
 * Issue 43 item 1: GET /api/v1/events, the change feed. A mirror built from the feed alone, in
 * pages of one while four writers land creates, updates, deletes, bulk upserts (through two API
 * processes) and then an erasure, ends equal to the server's lists: nothing skipped, nothing twice.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-feed-'));
// A local HTTPS receiver gets the same changes by webhook.
const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE };
const csr = csrTool(dataDir, ENV);
let receiver: Receiver;
let server: ServerProcess;
let api: ApiClient;
let slug: string;
let key: string;

beforeAll(async () => {
  ({ slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'feed'));
  ({ key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'sync'));
  receiver = await startReceiver();
  server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2', ...ENV });
  await until(() => server.started().filter((s) => s.roles.join() === 'api').length === 2, 20_000, 'two API processes');
  api = client(server.url, key);
});

afterAll(async () => {
  await server?.kill();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the change feed', () => {
  it('builds a mirror equal to the lists, in pages of one, while writers land', async () => {
    await mirrorScenario(api, csr, slug);
  });

  it('each item is exactly the body a webhook receiver gets for that change, without sentAt', async () => {
    const { slug: other } = await csr.json<{ slug: string }>('workspaces', 'create', 'feedhooks');
    const { key: otherKey } = await csr.json<{ key: string }>('keys', 'create', '--workspace', other, '--name', 'sync');
    await csr.json('webhooks', 'create', '--workspace', other, '--name', 'mirror', '--url', `${receiver.origin}/feed`);
    const otherApi = client(server.url, otherKey);
    const sync = feedMirror(otherApi);
    const id = (await otherApi.post('/api/v1/contacts', { firstName: 'Hooked', email: 'hooked@example.com' })).body.ids[0];
    const steps = [async () => undefined, () => otherApi.patch(`/api/v1/contacts/${id}`, { role: 'Buyer' }), () => otherApi.delete(`/api/v1/contacts/${id}`)];
    // One change at a time, each compared once delivered: both render the record as it is then.
    for (const [index, step] of steps.entries()) {
      await step();
      const delivered = await receiver.waitFor('/feed', (all) => all.length > index, 60_000);
      const { sentAt, ...body } = delivered[index]!.body;
      expect(sentAt).toEqual(expect.any(String));
      await eventually(() => sync.pull(1000), () => sync.events.length > index, 10_000, 'the change in the feed');
      expect(sync.events[index]).toEqual(body);
    }
    expect(sync.events.map((item) => item.event)).toEqual(['contacts.created', 'contacts.updated', 'contacts.deleted']);
  }, 120_000);

  it('a cursor from before a rebuild of the read model stays valid: the pages after it are the same', async () => {
    const before = feedMirror(api);
    await before.pull(50);
    const cursor = before.cursor()!;
    const rebuilt = await csr.run('projections', 'rebuild', 'records', '--json');
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    const answer = await api.get(`/api/v1/events?limit=1000&after=${cursor}`);
    expect(answer.status).toBe(200);
    const whole = feedMirror(api);
    await whole.drain(1000);
    expect(before.events.map((item) => item.id)).toEqual(whole.events.slice(0, 50).map((item) => item.id));
    expect(answer.body.data.map((item: FeedItem) => item.id)).toEqual(whole.events.slice(50, 50 + answer.body.data.length).map((item) => item.id));
    expect(answer.body.data.length).toBeGreaterThan(0);
  }, 120_000);

  it('filters by object and kind, and each item is the webhook body of its change', async () => {
    const created = await api.post('/api/v1/clients', { name: 'Filtered Co' });
    const id = created.body.ids[0];
    await api.delete(`/api/v1/clients/${id}`);
    const deletions = feedMirror(api, '&objects=clients&types=deleted');
    await deletions.drain(1000);
    expect(deletions.events.every((item) => item.event === 'clients.deleted')).toBe(true);
    const last = deletions.events.at(-1)!;
    expect(Object.keys(last)).toEqual(['id', 'event', 'object', 'source', 'occurredAt', 'data']);
    // The record as last saved.
    expect(last).toMatchObject({ object: 'clients', source: 'api', data: { id, name: 'Filtered Co' } });
  });

  it('long polls: an answer comes as soon as a write lands', async () => {
    const sync = feedMirror(api, '&objects=contacts');
    await sync.drain(1000);
    const started = Date.now();
    const waiting = api.get(`/api/v1/events?objects=contacts&wait=20&after=${sync.cursor()}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const created = await api.post('/api/v1/contacts', { firstName: 'Polly' });
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.data.map((item: FeedItem) => item.data.id)).toEqual([created.body.ids[0]]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('applies the key scope and masks links to objects the key cannot read', async () => {
    const { key: limited } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'contacts only', '--objects', 'contacts');
    const acme = (await api.post('/api/v1/clients', { name: 'Masked Inc' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Linked', client: acme })).body.ids[0];
    const scoped = client(server.url, limited);
    const sync = feedMirror(scoped);
    await sync.drain(1000);
    expect(sync.events.every((item) => item.object === 'contacts')).toBe(true);
    expect(sync.records.get('contacts')!.get(contact)).toMatchObject({ client: { id: acme } });
    expect((sync.records.get('contacts')!.get(contact) as Record<string, unknown>)['client']).toEqual({ id: acme });
    expect((await scoped.get('/api/v1/events?objects=clients')).status).toBe(403);
  });

  it('refuses cursors it cannot serve, and bad parameters, with clear messages', async () => {
    expect((await api.get('/api/v1/events?after=not-a-cursor')).body.error.message).toMatch(/not a cursor of this feed/);
    const ahead = Buffer.from('99999999999999999999:99999999999999999999').toString('base64url');
    const gone = await api.get(`/api/v1/events?after=${ahead}`);
    expect(gone.status).toBe(410);
    expect(gone.body.error.message).toMatch(/start again without "after"/);
    for (const query of ['limit=0', 'limit=1001', 'wait=31', 'types=moved', 'objects=nothing', 'offset=3', 'limit=1&limit=2']) {
      expect((await api.get(`/api/v1/events?${query}`)).status, query).toBe(422);
    }
    expect((await api.request('POST', '/api/v1/events', {})).status).toBe(405);
  });

  it('makes "events" a reserved object key', async () => {
    expect(await csr.fails(1, 'objects', 'create', '--workspace', slug, 'events', '--name', 'Events')).toMatch(/reserved by the API \(GET \/api\/v1\/events is the change feed\)/);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client, type ApiClient } from '../support/service.js';
import { feedMirror, mirrorScenario, type FeedItem } from '../support/feedMirror.js';
import { until } from '../support/until.js';

/**
 * Issue 43 item 1: GET /api/v1/events, the change feed. A mirror built from the feed alone, in
 * pages of one while four writers land creates, updates, deletes, bulk upserts (through two API
 * processes) and then an erasure, ends equal to the server's lists: nothing skipped, nothing twice.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-feed-'));
const csr = csrTool(dataDir);
let server: ServerProcess;
let api: ApiClient;
let slug: string;
let key: string;

beforeAll(async () => {
  ({ slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'feed'));
  ({ key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'sync'));
  server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2' });
  await until(() => server.started().filter((s) => s.roles.join() === 'api').length === 2, 20_000, 'two API processes');
  api = client(server.url, key);
});

afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the change feed', () => {
  it('builds a mirror equal to the lists, in pages of one, while writers land', async () => {
    await mirrorScenario(api, csr, slug);
  });

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

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client, type ApiClient } from '../support/service.js';
import { eventually, until } from '../support/until.js';

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
const OBJECTS = ['clients', 'contacts'] as const;

type Item = { id: string; event: string; object: string; source: string; occurredAt: string; data: { id: string } & Record<string, unknown> };
type Page = { data: Item[]; next: string; hasMore: boolean };

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

/** A sync client: applies each page in order, keeps the cursor, and remembers every event id seen. */
function mirror(reader: ApiClient, query = '') {
  const records = new Map<string, Map<string, unknown>>(OBJECTS.map((object) => [object, new Map()]));
  const seen = new Set<string>();
  const events: Item[] = [];
  let cursor: string | null = null;
  const pull = async (limit: number): Promise<Page> => {
    const answer = await reader.get(`/api/v1/events?limit=${limit}${cursor ? `&after=${cursor}` : ''}${query}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const page = answer.body as Page;
    for (const item of page.data) {
      expect(seen.has(item.id), `event ${item.id} listed twice`).toBe(false);
      seen.add(item.id);
      events.push(item);
      const kind = item.event.split('.')[1];
      if (kind === 'deleted') records.get(item.object)!.delete(item.data.id);
      else records.get(item.object)!.set(item.data.id, item.data);
    }
    cursor = page.next;
    return page;
  };
  /** Pulls until the feed says it has nothing more. */
  const drain = async (limit: number) => {
    for (;;) {
      const page = await pull(limit);
      if (!page.hasMore && page.data.length === 0) return;
    }
  };
  return { records, events, pull, drain, cursor: () => cursor };
}

async function listAll(object: string): Promise<Map<string, unknown>> {
  const found = new Map<string, unknown>();
  for (let offset = 0; ; offset += 1000) {
    const page = await api.get(`/api/v1/${object}?limit=1000&offset=${offset}`);
    expect(page.status).toBe(200);
    for (const record of page.body.data) found.set(record.id, record);
    if (page.body.data.length < 1000) return found;
  }
}

const pick = <T>(items: T[]): T | undefined => items[Math.floor(Math.random() * items.length)];

describe('the change feed', () => {
  it('builds a mirror equal to the lists, in pages of one, while writers land', async () => {
    const live: Record<(typeof OBJECTS)[number], string[]> = { clients: [], contacts: [] };
    const sync = mirror(api);
    let writing = true;
    let bulks = 0;
    const writer = async (w: number) => {
      for (let step = 0; step < 25; step++) {
        const object = pick([...OBJECTS])!;
        const roll = Math.random();
        const target = pick(live[object]);
        if (roll < 0.1) {
          const answer = await api.post('/api/v1/contacts', Array.from({ length: 22 }, (_, i) => ({ firstName: `Bulk ${w}-${step}-${i}`, email: `b${w}.${step}.${i}@example.com` })));
          expect(answer.status).toBe(201);
          live.contacts.push(...answer.body.ids);
          bulks++;
        } else if (roll < 0.45 || target === undefined) {
          const body = object === 'clients' ? { name: `Client ${w}-${step}`, tier: 'SMB' } : { firstName: `Person ${w}-${step}`, email: `p${w}.${step}@example.com`, phone: '+1 555 0100' };
          const answer = await api.post(`/api/v1/${object}`, body);
          expect(answer.status).toBe(201);
          live[object].push(answer.body.ids[0]);
        } else if (roll < 0.8) {
          const answer = await api.patch(`/api/v1/${object}/${target}`, object === 'clients' ? { notes: `step ${step}` } : { role: `role ${step}` });
          expect([200, 404]).toContain(answer.status);
        } else {
          live[object] = live[object].filter((id) => id !== target);
          const answer = await api.delete(`/api/v1/${object}/${target}`);
          expect([200, 404]).toContain(answer.status);
        }
      }
    };
    const reader = (async () => {
      while (writing) await sync.pull(1);
    })();
    await Promise.all([0, 1, 2, 3].map(writer));
    writing = false;
    await reader;

    // An erasure: an update whose erased fields read null.
    const erased = live.contacts[0]!;
    await csr.json('privacy', 'erase', '--workspace', slug, '--contact', erased, '--reason', 'feed test');
    // Reactors (the health score) may still append after the last answer: the mirror converges.
    const compare = async () => {
      await sync.drain(1);
      return Promise.all(OBJECTS.map(async (object) => ({ mirror: sync.records.get(object), list: await listAll(object) })));
    };
    const final = await eventually(compare, (pairs) => pairs.every(({ mirror, list }) => isDeepStrictEqual(mirror, list)), 20_000, 'the mirror equal to the lists').catch(compare);
    for (const { mirror: copy, list } of final) expect(copy).toEqual(list);
    expect(bulks).toBeGreaterThan(0);
    const erasure = sync.events.filter((item) => item.data.id === erased).at(-1)!;
    expect(erasure).toMatchObject({ event: 'contacts.updated', data: { email: null, phone: null } });
    // Bulk actions are listed record by record, never in their .bulk form.
    expect(sync.events.some((item) => item.event.endsWith('.bulk'))).toBe(false);
    expect(sync.events.filter((item) => item.event === 'contacts.deleted').length).toBeGreaterThan(0);

    // A second client reading in pages of 1000 sees the same events in the same order.
    const fast = mirror(api);
    await fast.drain(1000);
    expect(fast.events.map((item) => item.id)).toEqual(sync.events.map((item) => item.id));
    // Nothing new: the stored cursor answers an empty page and gives itself back.
    const cursor = fast.cursor();
    expect(await api.get(`/api/v1/events?after=${cursor}`)).toMatchObject({ status: 200, body: { data: [], next: cursor, hasMore: false } });
  });

  it('filters by object and kind, and each item is the webhook body of its change', async () => {
    const created = await api.post('/api/v1/clients', { name: 'Filtered Co' });
    const id = created.body.ids[0];
    await api.delete(`/api/v1/clients/${id}`);
    const deletions = mirror(api, '&objects=clients&types=deleted');
    await deletions.drain(1000);
    expect(deletions.events.every((item) => item.event === 'clients.deleted')).toBe(true);
    const last = deletions.events.at(-1)!;
    expect(Object.keys(last)).toEqual(['id', 'event', 'object', 'source', 'occurredAt', 'data']);
    // The record as last saved.
    expect(last).toMatchObject({ object: 'clients', source: 'api', data: { id, name: 'Filtered Co' } });
  });

  it('long polls: an answer comes as soon as a write lands', async () => {
    const sync = mirror(api, '&objects=contacts');
    await sync.drain(1000);
    const started = Date.now();
    const waiting = api.get(`/api/v1/events?objects=contacts&wait=20&after=${sync.cursor()}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const created = await api.post('/api/v1/contacts', { firstName: 'Polly' });
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.data.map((item: Item) => item.data.id)).toEqual([created.body.ids[0]]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('applies the key scope and masks links to objects the key cannot read', async () => {
    const { key: limited } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'contacts only', '--objects', 'contacts');
    const acme = (await api.post('/api/v1/clients', { name: 'Masked Inc' })).body.ids[0];
    const contact = (await api.post('/api/v1/contacts', { firstName: 'Linked', client: acme })).body.ids[0];
    const scoped = client(server.url, limited);
    const sync = mirror(scoped);
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

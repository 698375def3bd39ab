import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';
import type { Csr } from './cli.js';
import type { ApiClient } from './service.js';
import { eventually } from './until.js';

/**
 * Issue 43's mirror check, shared by the backends it runs on (test/api/changeFeed.test.ts on the
 * embedded store, test/postgres/changeFeed.test.ts on PostgreSQL): a sync client that knows only
 * the change feed, and a scenario of concurrent writers whose end state it must equal.
 */

export const MIRRORED = ['clients', 'contacts'] as const;

export type FeedItem = { id: string; event: string; object: string; source: string; occurredAt: string; data: { id: string } & Record<string, unknown> };
export type FeedPage = { data: FeedItem[]; next: string; hasMore: boolean };

/** A sync client: applies each page in order, keeps the cursor, and remembers every event id seen. */
export function feedMirror(reader: ApiClient, query = '') {
  const records = new Map<string, Map<string, unknown>>(MIRRORED.map((object) => [object, new Map()]));
  const seen = new Set<string>();
  const events: FeedItem[] = [];
  let cursor: string | null = null;
  const pull = async (limit: number): Promise<FeedPage> => {
    const answer = await reader.get(`/api/v1/events?limit=${limit}${cursor ? `&after=${cursor}` : ''}${query}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const page = answer.body as FeedPage;
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

export async function listAll(api: ApiClient, object: string): Promise<Map<string, unknown>> {
  const found = new Map<string, unknown>();
  for (let offset = 0; ; offset += 1000) {
    const page = await api.get(`/api/v1/${object}?limit=1000&offset=${offset}`);
    expect(page.status).toBe(200);
    for (const record of page.body.data) found.set(record.id, record);
    if (page.body.data.length < 1000) return found;
  }
}

const pick = <T>(items: T[]): T | undefined => items[Math.floor(Math.random() * items.length)];

/**
 * Four writers land random creates, updates, deletes and bulk upserts while a mirror reads the feed
 * in pages of one; then `csr privacy erase` erases a contact. The mirror ends equal to the lists,
 * having seen no event twice, and a second reader in pages of 1000 sees the same events in order.
 */
export async function mirrorScenario(api: ApiClient, csr: Csr, slug: string, stepsPerWriter = 25): Promise<void> {
  const live: Record<(typeof MIRRORED)[number], string[]> = { clients: [], contacts: [] };
  const sync = feedMirror(api);
  let writing = true;
  let bulks = 0;
  const writer = async (w: number) => {
    for (let step = 0; step < stepsPerWriter; step++) {
      const object = pick([...MIRRORED])!;
      const roll = Math.random();
      const target = pick(live[object]);
      if (roll < 0.1 || (step === 0 && w === 0)) {
        const answer = await api.post('/api/v1/contacts', Array.from({ length: 22 }, (_, i) => ({ firstName: `Bulk ${w}-${step}-${i}`, email: `b${w}.${step}.${i}@example.com` })));
        expect(answer.status, JSON.stringify(answer.body)).toBe(201);
        live.contacts.push(...answer.body.ids);
        bulks++;
      } else if (roll < 0.45 || target === undefined) {
        const body = object === 'clients' ? { name: `Client ${w}-${step}`, tier: 'SMB' } : { firstName: `Person ${w}-${step}`, email: `p${w}.${step}@example.com`, phone: '+1 555 0100' };
        const answer = await api.post(`/api/v1/${object}`, body);
        expect(answer.status, JSON.stringify(answer.body)).toBe(201);
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
  // The reader stops with the writers, also when one fails (its failure is the one reported).
  const writers = Promise.all([0, 1, 2, 3].map(writer)).finally(() => (writing = false));
  const [wrote, read] = await Promise.allSettled([writers, reader]);
  for (const outcome of [wrote, read]) if (outcome.status === 'rejected') throw outcome.reason;

  // An erasure: an update whose erased fields read null.
  const erased = live.contacts[0]!;
  await csr.json('privacy', 'erase', '--workspace', slug, '--contact', erased, '--reason', 'feed test');
  // Reactors (the health score) may still append after the last answer: the mirror converges.
  const compare = async () => {
    await sync.drain(1);
    return Promise.all(MIRRORED.map(async (object) => ({ mirror: sync.records.get(object), list: await listAll(api, object) })));
  };
  const final = await eventually(compare, (pairs) => pairs.every(({ mirror, list }) => isDeepStrictEqual(mirror, list)), 20_000, 'the mirror equal to the lists').catch(compare);
  for (const { mirror: copy, list } of final) expect(copy).toEqual(list);
  expect(bulks).toBeGreaterThan(0);
  const erasure = sync.events.filter((item) => item.data.id === erased).at(-1)!;
  expect(erasure).toMatchObject({ event: 'contacts.updated', data: { email: null, phone: null } });
  // Bulk actions are listed record by record, never in their .bulk form.
  expect(sync.events.some((item) => item.event.endsWith('.bulk'))).toBe(false);
  expect(sync.events.filter((item) => item.event.endsWith('.deleted')).length).toBeGreaterThan(0);

  // A second client reading in pages of 1000 sees the same events in the same order.
  const fast = feedMirror(api);
  await fast.drain(1000);
  expect(fast.events.map((item) => item.id)).toEqual(sync.events.map((item) => item.id));
  // Nothing new: the stored cursor answers an empty page and gives itself back.
  const cursor = fast.cursor();
  expect(await api.get(`/api/v1/events?after=${cursor}`)).toMatchObject({ status: 200, body: { data: [], next: cursor, hasMore: false } });
}

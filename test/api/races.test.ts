import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { until } from '../support/until.js';

/**
 * Issue 22 items 1-3: concurrent writers against a real server of two API processes, each request
 * on a connection of its own so that both processes (and so two writers to the log) take part.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-races-'));
let server: ServerProcess;
let key: string;
const PARALLEL = 16;

type Answer = { status: number; body: any };

function send(method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const outgoing = request(`${server.url}${path}`, { method, agent: false, headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, body: text ? JSON.parse(text) : null }));
    });
    outgoing.on('error', reject);
    outgoing.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const parallel = (count: number, make: (i: number) => Promise<Answer>) => Promise.all(Array.from({ length: count }, (_, i) => make(i)));
const sum = (answers: Answer[], member: 'created' | 'updated') => answers.reduce((total, answer) => total + (answer.body[member] ?? 0), 0);

/** No answer names a stream, a table or a file (PRODUCT.md, "Overload and faults"). */
function expectNoInternalNames(answers: Answer[]): void {
  for (const answer of answers) expect(JSON.stringify(answer.body)).not.toMatch(/record-|reservation-|autonumber-|stream|revision|sqlite|\.db/i);
}

beforeAll(async () => {
  const csr = csrTool(dataDir);
  await csr.json('workspaces', 'create', 'races');
  ({ key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'races', '--name', 'racer'));
  server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2' });
  await until(() => server.started().filter((s) => s.roles.join() === 'api').length === 2, 20_000, 'two API processes');
});

afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('concurrent upserts that match the same record', () => {
  it(`${PARALLEL} parallel POST { name: "Acme" } create exactly one client and update it ${PARALLEL - 1} times`, async () => {
    const answers = await parallel(PARALLEL, (i) => send('POST', '/api/v1/clients', { name: 'Acme', notes: `writer ${i}` }));
    expect(answers.map((a) => a.status).sort()).toEqual(['201', ...Array(PARALLEL - 1).fill('200')].map(Number).sort());
    expect({ created: sum(answers, 'created'), updated: sum(answers, 'updated') }).toEqual({ created: 1, updated: PARALLEL - 1 });
    expect(new Set(answers.map((a) => a.body.ids[0])).size).toBe(1);
    const listed = await send('GET', '/api/v1/clients?name=acme');
    expect(listed.body.total).toBe(1);
    // From then on the name still matches one record.
    const again = await send('POST', '/api/v1/clients', { name: 'ACME', tier: 'SMB' });
    expect(again.body).toMatchObject({ created: 0, updated: 1, errors: [] });
    // The writers that lost the name took no number: the next client has the next one.
    expect(listed.body.data[0].clientNumber).toBe('CL-00001');
    const next = await send('POST', '/api/v1/clients', { name: 'After Acme' });
    expect((await send('GET', `/api/v1/clients/${next.body.ids[0]}`)).body.data.clientNumber).toBe('CL-00002');
  });

  it(`${PARALLEL} parallel contacts with ?match=email make one contact`, async () => {
    const answers = await parallel(PARALLEL, (i) => send('POST', '/api/v1/contacts?match=email', { firstName: 'Ana', lastName: `Lima ${i}`, email: 'Ana@Example.test' }));
    expect(answers.every((a) => a.status === 200 || a.status === 201)).toBe(true);
    expect({ created: sum(answers, 'created'), updated: sum(answers, 'updated') }).toEqual({ created: 1, updated: PARALLEL - 1 });
    expect((await send('GET', '/api/v1/contacts?email=ana@example.test')).body.total).toBe(1);
  });

  it('a name released by a rename or a delete can be claimed again', async () => {
    const first = await send('POST', '/api/v1/clients', { name: 'Renamed Co' });
    const id = first.body.ids[0];
    expect((await send('PATCH', `/api/v1/clients/${id}`, { name: 'Renamed Co 2' })).status).toBe(200);
    const second = await parallel(4, () => send('POST', '/api/v1/clients', { name: 'Renamed Co' }));
    expect(sum(second, 'created')).toBe(1);
    const secondId = second.find((a) => a.body.created === 1)!.body.ids[0];
    expect(secondId).not.toBe(id);
    expect((await send('DELETE', `/api/v1/clients/${secondId}`)).status).toBe(200);
    const third = await send('POST', '/api/v1/clients', { name: 'Renamed Co' });
    expect(third.body).toMatchObject({ created: 1 });
    expect(third.body.ids[0]).not.toBe(secondId);
  });
});

describe('auto numbers are unique', () => {
  it('parallel clients setting one clientNumber by hand: one holds it, the others update it (it is their match key)', async () => {
    const answers = await parallel(PARALLEL, (i) => send('POST', '/api/v1/clients', { name: `Hand ${i}`, clientNumber: 'LEGACY-7' }));
    expect({ created: sum(answers, 'created'), updated: sum(answers, 'updated') }).toEqual({ created: 1, updated: PARALLEL - 1 });
    expect((await send('GET', '/api/v1/clients?clientNumber=legacy-7')).body.total).toBe(1);
  });

  it('parallel PATCHes setting one clientNumber on different records: one succeeds, the others are 422 naming the holder', async () => {
    const made = await send('POST', '/api/v1/clients', Array.from({ length: 8 }, (_, i) => ({ name: `Patcher ${i}` })));
    const ids: string[] = made.body.ids;
    const answers = await Promise.all(ids.map((id) => send('PATCH', `/api/v1/clients/${id}`, { clientNumber: 'Old-42' })));
    const winners = answers.filter((a) => a.status === 200);
    expect(winners).toHaveLength(1);
    const holder = winners[0]!.body.data.id;
    for (const loser of answers.filter((a) => a.status !== 200)) {
      expect(loser.status).toBe(422);
      expect(loser.body.error.message).toContain('clientNumber');
      expect(loser.body.error.message).toContain('Old-42');
      expect(loser.body.error.message).toContain(holder);
    }
    expectNoInternalNames(answers);
    // Case-insensitive, also through ?match= of another field.
    const other = await send('POST', '/api/v1/clients?match=name', { name: 'Patcher 0', clientNumber: 'old-42' });
    if (holder !== ids[0]) expect(other.body.errors[0].message).toContain(holder);
  });

  it('the counter skips numbers set by hand, and stays gap-free', async () => {
    const before = (await send('GET', '/api/v1/clients?limit=1000')).body.data.map((c: any) => c.clientNumber as string);
    const highest = Math.max(...before.filter((n: string) => /^CL-\d+$/.test(n)).map((n: string) => Number(n.slice(3))));
    const number = (n: number) => `CL-${String(n).padStart(5, '0')}`;
    const byHand = await send('POST', '/api/v1/clients', { name: 'Took a number', clientNumber: number(highest + 2).toLowerCase() });
    expect(byHand.body.created).toBe(1);
    const answers = await parallel(6, (i) => send('POST', '/api/v1/clients', { name: `Numbered ${i}` }));
    expect(sum(answers, 'created')).toBe(6);
    const all = (await send('GET', '/api/v1/clients?limit=1000')).body.data.map((c: any) => (c.clientNumber as string).toUpperCase());
    expect(new Set(all).size).toBe(all.length);
    const given = await Promise.all(answers.map(async (a) => (await send('GET', `/api/v1/clients/${a.body.ids[0]}`)).body.data.clientNumber));
    // The six took the next seven numbers but the one set by hand: none skipped, none shared.
    expect(given.sort()).toEqual([highest + 1, highest + 3, highest + 4, highest + 5, highest + 6, highest + 7].map(number));
  });
});

describe('parallel PATCH of one record', () => {
  it('every writer gets 200 or a clean 409, never an internal name, and the rules hold', async () => {
    const made = await send('POST', '/api/v1/surveys', { type: 'NPS', score: 9, date: '2024-01-01' });
    expect(made.status).toBe(201);
    const id = made.body.ids[0];
    const answers = await parallel(48, (i) =>
      i % 2 === 0 ? send('PATCH', `/api/v1/surveys/${id}`, { comment: `writer ${i}` }) : send('POST', '/api/v1/surveys', { id, comment: `writer ${i}` }),
    );
    for (const [i, answer] of answers.entries()) {
      const shown = JSON.stringify(answer.body);
      if (i % 2 === 0) {
        expect([200, 409], shown).toContain(answer.status);
        if (answer.status === 409) expect(answer.body.error.message, shown).toBe('the record changed while saving; retry');
      } else {
        // An upsert reports per record: a conflict that outlasted the retries is that record's error.
        expect([200, 422], shown).toContain(answer.status);
        if (answer.status === 200) expect(answer.body.updated, shown).toBe(1);
        else expect(answer.body.errors, shown).toEqual([{ index: 0, message: 'the record changed while saving; retry' }]);
      }
    }
    expect(answers.filter((a) => a.status === 200).length, JSON.stringify(answers.map((a) => a.status))).toBeGreaterThanOrEqual(40);
    expectNoInternalNames(answers);
    // The survey rules run on the merged record of each retry: CSAT with score 9 is refused.
    const mixed = await parallel(8, (i) => send('PATCH', `/api/v1/surveys/${id}`, i % 2 === 0 ? { type: 'CSAT' } : { comment: `again ${i}` }));
    for (const answer of mixed) expect([200, 409, 422], JSON.stringify(answer.body)).toContain(answer.status);
    expect((await send('GET', `/api/v1/surveys/${id}`)).body.data.type).toBe('NPS');
    expectNoInternalNames(mixed);
  });
});

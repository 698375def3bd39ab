import { expect, it } from 'vitest';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { client, startTestService } from '../support/service.js';
import { masterKeyFile } from './support.js';

/**
 * Conditional requests on PostgreSQL (issue 43 item 2; test/api/conditional.test.ts on the embedded
 * store): two services on one database, as two machines, answer the same ETag for a record, and of
 * two clients PATCHing it with the same If-Match through different services exactly one wins.
 */

const backend = await postgresBackend();

describeBackend('conditional requests on PostgreSQL', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('one ETag on both services; two PATCHes with the same If-Match through different services: one 200, one 412 naming the current ETag', async () => {
    const env = { DATABASE_URL: await database(), MASTER_KEY_FILE: masterKeyFile() };
    const [first, second] = [await startTestService(env), await startTestService(env)];
    try {
      const { key } = await (await first.workspace()).key();
      const [a, b] = [client(first, key), client(second, key)];
      for (let round = 0; round < 5; round++) {
        const id = (await a.post('/api/v1/clients', { name: `Contested ${round}` })).body.ids[0] as string;
        const etag = (await a.get(`/api/v1/clients/${id}`)).headers.get('ETag')!;
        expect(etag).toMatch(/^"\d+"$/);
        expect((await b.request('GET', `/api/v1/clients/${id}`, undefined, { 'If-None-Match': etag })).status).toBe(304);
        const answers = await Promise.all([a, b].map((api, i) => api.request('PATCH', `/api/v1/clients/${id}`, { notes: `writer ${i}` }, { 'If-Match': etag })));
        expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412]);
        const winner = answers.findIndex((answer) => answer.status === 200);
        const current = answers[winner]!.headers.get('ETag')!;
        expect(answers[1 - winner]!.headers.get('ETag')).toBe(current);
        const read = await b.get(`/api/v1/clients/${id}`);
        expect(read.body.data.notes).toBe(`writer ${winner}`);
        expect(read.headers.get('ETag')).toBe(current);
      }
    } finally {
      await second.stop();
      await first.stop();
    }
  }, 120_000);
});

import { expect, it } from 'vitest';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { startTestService } from '../support/service.js';
import { eventually } from '../support/until.js';
import { masterKeyFile } from './support.js';

/**
 * Rate limits across machines on PostgreSQL (issue 43, docs/sync-clients.md "Several machines"):
 * two services on one database, as two machines behind a balancer, spend one bucket per key; a
 * second key is not touched by the first one's refusals.
 */

const backend = await postgresBackend();

describeBackend('rate limits on PostgreSQL', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('two services on one database spend one bucket per key, not one per service', async () => {
    // One token back every 12 s: within the test a bucket holds what it was given.
    const env = { DATABASE_URL: await database(), MASTER_KEY_FILE: masterKeyFile(), RATE_LIMIT_DEFAULT: '5/m,burst=10' };
    const [first, second] = [await startTestService(env), await startTestService(env)];
    try {
      const ws = await first.workspace();
      const [loopingKey, other] = [await ws.key(), (await ws.key()).key];
      const looping = loopingKey.key;
      // Requests straight to each app (the test client would also fetch the OpenAPI document with the key).
      const get = (service: typeof first, key: string) => service.service.app!.request('/api/v1/clients', { headers: { Authorization: `Bearer ${key}` } });
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) {
        for (const service of [first, second]) statuses.push((await get(service, looping)).status);
      }
      // 10 in the one bucket (at most one token refilled meanwhile), then 429s.
      const allowed = statuses.filter((status) => status === 200).length;
      expect(allowed).toBeGreaterThanOrEqual(10);
      expect(allowed).toBeLessThanOrEqual(11);
      expect(statuses.filter((status) => status === 429).length).toBe(30 - allowed);
      expect((await get(second, other)).status).toBe(200);
      // Both services' refusals reach the shared row (within a second), which `csr keys list` reads.
      const refused = 30 - allowed;
      const stats = await eventually(
        async () => (await first.service.backends.rateLimits.refusals([loopingKey.record.id])).get(loopingKey.record.id),
        (found) => found?.recent === refused,
        10_000,
        'the refusals of both services',
      );
      expect(stats).toMatchObject({ recent: refused, lastAt: expect.any(String) });
    } finally {
      await second.stop();
      await first.stop();
    }
  }, 120_000);
});

import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openBackends } from '../../src/backends.js';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { client, startTestService } from '../support/service.js';
import { masterKeyFile } from './support.js';

/**
 * The whole service on PostgreSQL through its API (DATABASE_URL alone switches every store): writes
 * are read back at once, lists filter, history and the audit chain hold, an erasure deletes the
 * key, and a second service on the same database (another process) sees the same records.
 */

const backend = await postgresBackend();

describeBackend('the service on PostgreSQL', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('refuses to start without MASTER_KEY_FILE, in one line naming it', async () => {
    const url = await database();
    expect(() => loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' })).toThrow(/^invalid configuration: MASTER_KEY_FILE must be set with DATABASE_URL: /);
    // A Config made otherwise is refused by the backends too, before anything connects.
    const config = { ...loadConfig({ DATABASE_URL: url, MASTER_KEY_FILE: masterKeyFile(), LOG_LEVEL: 'silent' }), masterKeyFile: null };
    await expect(openBackends(config)).rejects.toThrow(/MASTER_KEY_FILE must be set with DATABASE_URL/);
  });

  it('serves records end to end: write, read your write, list with a filter, history, a second process on the same database', async () => {
    const url = await database();
    const env = { DATABASE_URL: url, MASTER_KEY_FILE: masterKeyFile() };
    const first = await startTestService(env);
    try {
      const { key } = await (await first.workspace()).key();
      const api = client(first, key);
      const created = await api.post('/api/v1/clients', [{ name: 'Acme', tier: 'Enterprise' }, { name: 'Globex', tier: 'SMB' }]);
      expect(created.status).toBe(201);
      const [acme] = created.body.ids as string[];
      const read = await api.get(`/api/v1/clients/${acme}`);
      expect(read.status).toBe(200);
      expect(read.body.data.name).toBe('Acme');
      const listed = await api.get('/api/v1/clients?tier=Enterprise');
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((record: { name: string }) => record.name)).toEqual(['Acme']);
      expect(listed.body.total).toBe(1);
      const patched = await api.patch(`/api/v1/clients/${acme}`, { tier: 'SMB' });
      expect(patched.status).toBe(200);
      expect((await api.get('/api/v1/clients?tier=SMB')).body.total).toBe(2);
      const history = await api.get(`/api/v1/clients/${acme}/history`);
      expect(history.status).toBe(200);
      expect(history.body.data.length).toBeGreaterThanOrEqual(2);

      // Another process on the same database (same master key): the same records, at once.
      const second = await startTestService(env);
      try {
        const other = client(second, key);
        const seen = await other.get(`/api/v1/clients/${acme}`);
        expect(seen.status).toBe(200);
        expect(seen.body.data.tier).toBe('SMB');
        const made = await other.post('/api/v1/clients', { name: 'Initech' });
        expect(made.status).toBe(201);
        expect((await api.get(`/api/v1/clients/${made.body.ids[0]}`)).status).toBe(200);
      } finally {
        await second.stop();
      }
      const health = await api.get('/health/ready');
      expect(health.status).toBe(200);
      const chain = await first.service.backends.events.checkChain({ until: await first.service.backends.events.headPosition() });
      expect(chain.firstBreak).toBeNull();
      expect(chain.chained).toBe(chain.events);
    } finally {
      await first.stop();
    }
  }, 120_000);
});

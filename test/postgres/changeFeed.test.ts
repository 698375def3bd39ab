import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { csrTool } from '../support/cli.js';
import { feedMirror, mirrorScenario, type FeedItem } from '../support/feedMirror.js';
import { spawnServer } from '../support/process.js';
import { client } from '../support/service.js';
import { until } from '../support/until.js';
import { masterKeyFile } from './support.js';

/**
 * Issue 43's mirror check on PostgreSQL (test/api/changeFeed.test.ts runs it on the embedded
 * store): a mirror built only from the feed, in pages of one while four writers land through two
 * API processes, equals the lists after creates, updates, deletes, bulk upserts and an erasure.
 * Here positions are given under the log's head-row lock inside each appending transaction
 * (docs/sync-clients.md): the feed's bound "read only up to the projection's checkpoint" must hold
 * with concurrent transactions too.
 */

const backend = await postgresBackend();

describeBackend('the change feed on PostgreSQL', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('builds a mirror equal to the lists, in pages of one, while writers land; a long poll answers a write', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'csr-pg-feed-'));
    const env = { DATABASE_URL: await database(), MASTER_KEY_FILE: masterKeyFile() };
    const csr = csrTool(dataDir, env);
    const server = await spawnServer({ DATA_DIR: dataDir, API_PROCESSES: '2', ...env }, undefined, 60_000);
    try {
      await until(() => server.started().filter((s) => s.roles.join() === 'api').length === 2, 30_000, 'two API processes');
      const { slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'feed');
      const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'sync');
      const api = client(server.url, key);
      await mirrorScenario(api, csr, slug);
      // A long poll is answered by a write here too (the PostgreSQL read store's checkpoint waits).
      const caughtUp = feedMirror(api);
      await caughtUp.drain(1000);
      const waiting = api.get(`/api/v1/events?wait=20&after=${caughtUp.cursor()}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      const created = await api.post('/api/v1/contacts', { firstName: 'Polly' });
      const answer = await waiting;
      expect(answer.body.data.map((item: FeedItem) => item.data.id)).toEqual([created.body.ids[0]]);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await server.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});

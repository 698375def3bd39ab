import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { Sqlite } from '../../src/sqlite/driver.js';
import { csrTool } from '../support/cli.js';
import { repoRoot, spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';
import { filesHolding as filesInDataDir } from '../support/dataDirScan.js';

/**
 * Upgrading in place (issue 32 item 2): test/fixtures/release-store is a DATA_DIR of the release
 * before the audit chain. A contact that release wrote (plaintext, unchained) stays readable; its
 * erasure is refused unless --rewrite-legacy re-encrypts its old events; plaintext in events the
 * chain covers is refused even then; new writes are encrypted.
 */

const WORKSPACE = '92c58b1d-a343-4a7a-be47-c020ef47bbb7';
const OLD = randomUUID();
const CHAINED = randomUUID();
const OLD_EMAIL = 'olga.old@example.com';
const OLD_PHONE = '+1 555 0123 9876';
let dataDir: string;
let server: ServerProcess;
let api: ReturnType<typeof client>;
const csr = () => csrTool(dataDir);

function contactCreated(id: string, email: string, phone: string) {
  return { schemaVersion: 1, workspaceId: WORKSPACE, object: 'contacts', recordId: id, fields: { firstName: 'Olga', lastName: id.slice(0, 6), email, phone } };
}
const META = { source: 'api', actor: { type: 'apiKey', id: 'ae73fd48-0eec-4137-95ad-e9d3f9eced2f', name: 'Old key' }, actionId: 'a', correlationId: 'a', causationId: 'a' };

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'csr-privacy-legacy-'));
  cpSync(join(repoRoot, 'test', 'fixtures', 'release-store'), dataDir, { recursive: true });
  // What the earlier release wrote for a contact: plaintext, no hash (as the fixture's own events).
  const log = new Sqlite(join(dataDir, 'events.db'));
  log.prepare('INSERT INTO events (id, stream, revision, type, created, data, metadata) VALUES (?, ?, 0, ?, ?, ?, ?)').run(
    randomUUID(), `record-${OLD}`, 'RecordCreated', Date.now(), JSON.stringify(contactCreated(OLD, OLD_EMAIL, OLD_PHONE)), JSON.stringify(META),
  );
  log.close();
  // And a release with the chain but before encryption: plaintext in a chained event.
  const chained = openSqliteEventStore({ path: join(dataDir, 'events.db') });
  await chained.append(`record-${CHAINED}`, [{ id: randomUUID(), type: 'RecordCreated', data: contactCreated(CHAINED, 'chained@example.com', '+1 555 0000 1111'), metadata: META as never }], { expectedRevision: 'no_stream' });
  await chained.close();
  server = await spawnServer({ DATA_DIR: dataDir });
  const { key } = await csr().json<{ key: string }>('keys', 'create', '--workspace', 'legacy', '--name', 'New key');
  api = client(server.url, key);
}, 60_000);

afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

const filesHolding = (needle: string) => filesInDataDir(dataDir, needle);

describe('personal data written before encryption', () => {
  it('stays readable after the upgrade, and new writes are encrypted', async () => {
    expect((await api.get(`/api/v1/contacts/${OLD}`)).body.data).toMatchObject({ email: OLD_EMAIL, phone: OLD_PHONE });
    const made = await api.post('/api/v1/contacts', { firstName: 'Nora', email: 'nora.new@example.com' });
    expect(made.status).toBe(201);
    const log = new Sqlite(join(dataDir, 'events.db'), { readonly: true });
    const row = log.prepare('SELECT data FROM events WHERE stream = ?').get(`record-${made.body.ids[0]}`) as { data: string };
    log.close();
    expect(row.data).not.toContain('nora.new@example.com');
    expect((await api.get(`/api/v1/contacts/${made.body.ids[0]}`)).body.data).toMatchObject({ email: 'nora.new@example.com' });
  });

  it('refuses to erase it without --rewrite-legacy, and erases it everywhere with it', async () => {
    const refused = await csr().fails(1, 'privacy', 'erase', '--workspace', 'legacy', '--contact', OLD);
    expect(refused).toMatch(/written before encryption .*nothing was erased\. Run again with --rewrite-legacy/);
    expect((await api.get(`/api/v1/contacts/${OLD}`)).body.data).toMatchObject({ email: OLD_EMAIL });

    const erased = await csr().json<{ erased: { id: string; fields: string[] }[] }>('privacy', 'erase', '--workspace', 'legacy', '--contact', OLD, '--rewrite-legacy');
    expect(erased.erased).toEqual([{ object: 'contacts', id: OLD, fields: ['firstName', 'lastName', 'email', 'phone'] }]);
    expect((await api.get(`/api/v1/contacts/${OLD}`)).body.data).toMatchObject({ email: null, phone: null, firstName: null });
    expect(filesHolding(OLD_EMAIL)).toEqual([]);
    expect(filesHolding(OLD_PHONE)).toEqual([]);
    const verify = await csr().run('audit', 'verify', '--json');
    expect(verify.code, verify.stdout).toBe(0);
  }, 60_000);

  it('refuses --rewrite-legacy where the plaintext is in events the audit chain covers', async () => {
    const refused = await csr().fails(1, 'privacy', 'erase', '--workspace', 'legacy', '--contact', CHAINED, '--rewrite-legacy');
    expect(refused).toMatch(/audit chain covers; re-encrypting them would break the chain, so nothing was erased/);
    expect((await api.get(`/api/v1/contacts/${CHAINED}`)).body.data).toMatchObject({ email: 'chained@example.com' });
  }, 60_000);
});

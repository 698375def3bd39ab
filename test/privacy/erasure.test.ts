import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sqlite } from '../../src/sqlite/driver.js';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { RECEIVER_CA_FILE, startReceiver, type Receiver } from '../support/receiver.js';
import { client } from '../support/service.js';
import { filesHolding as filesInDataDir } from '../support/dataDirScan.js';

/**
 * Issue 32, "Done when": a contact with 50 revisions, two conversations that link (or linked) it
 * and a survey is erased with `csr privacy erase`; every read then shows its personal fields null,
 * no byte of its email or phone is left in DATA_DIR, the audit chain verifies, a backup made
 * before the erasure restored with the ledger keeps the person erased, and a rebuild agrees.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-privacy-'));
const elsewhere = mkdtempSync(join(tmpdir(), 'csr-privacy-files-'));
// Retries every 1.5 s for five minutes: the deliveries to /down must still be retrying when the
// erasure comes, however long the machine takes to get there.
const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE, WEBHOOK_RETRY_DELAYS: Array.from({ length: 200 }, () => '1500ms').join(',') };
const EMAIL = 'erin.erasable@example.com';
const PHONE = '+1 555 0199 4242';
const csr = csrTool(dataDir, ENV);
let server: ServerProcess | undefined;
let receiver: Receiver;
let api: ReturnType<typeof client>;
let key: string;
let slug: string;
let contact: string;
let kept: string;
const conversations: string[] = [];
let survey: string;
let ownedClient: string;
let before: string;
let erasedOnce = false;

const filesHolding = (needle: string) => filesInDataDir(dataDir, needle);

beforeAll(async () => {
  receiver = await startReceiver();
  // A receiver that is down until the erasure: its deliveries wait for a retry meanwhile.
  receiver.on('/down', () => (erasedOnce ? 204 : 500));
  ({ slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'privacy'));
  ({ key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'crm'));
  await csr.json('fields', 'add', '--workspace', slug, 'clients', 'ownerEmail', '--format', 'text', '--personal');
  await csr.json('webhooks', 'create', '--workspace', slug, '--name', 'up', '--url', `${receiver.origin}/up`);
  await csr.json('webhooks', 'create', '--workspace', slug, '--name', 'down', '--url', `${receiver.origin}/down`, '--objects', 'contacts');
  server = await spawnServer({ DATA_DIR: dataDir, ...ENV });
  api = client(server.url, key);

  const created = await api.post('/api/v1/contacts', { firstName: 'Erin', lastName: 'Erasable', email: EMAIL, phone: PHONE, role: 'Buyer', notes: 'met at the fair' });
  expect(created.status).toBe(201);
  contact = created.body.ids[0];
  kept = (await api.post('/api/v1/contacts', { firstName: 'Kim', lastName: 'Kept', email: 'kim.kept@example.com' })).body.ids[0];
  for (let i = 1; i < 50; i++) {
    const changed = await api.patch(`/api/v1/contacts/${contact}`, i % 2 ? { notes: `call ${i}: ask for ${PHONE}` } : { role: `Buyer ${i}` });
    expect(changed.status).toBe(200);
  }
  for (const subject of ['Kick-off', 'Follow-up']) {
    const made = await api.post('/api/v1/conversations', { subject, date: '2026-05-01T10:00:00Z', channel: 'Email', contacts: [contact, kept], from: EMAIL, content: `Reach me at ${PHONE}` });
    expect(made.status).toBe(201);
    conversations.push(made.body.ids[0]);
  }
  // The second one no longer links the contact: it did once, which is enough.
  expect((await api.patch(`/api/v1/conversations/${conversations[1]}`, { contacts: [kept] })).status).toBe(200);
  const answered = await api.post('/api/v1/surveys', { type: 'NPS', score: 9, date: '2026-05-02', contact, comment: `Great, mail me at ${EMAIL}` });
  expect(answered.status).toBe(201);
  survey = answered.body.ids[0];
  const owned = await api.post('/api/v1/clients', { name: 'Owned Inc', ownerEmail: EMAIL, industry: 'Retail' });
  expect(owned.status).toBe(201);
  ownedClient = owned.body.ids[0];
  // The fan-out has passed every write (it goes in log order, and the client was written last):
  // none of them is still being turned into a delivery when the erasure comes.
  await receiver.waitFor(
    '/up',
    (requests) =>
      requests.some((r) => r.body?.event === 'surveys.created') && requests.some((r) => r.body?.event === 'clients.created' && r.body?.data?.id === ownedClient),
    60_000,
  );
  before = new Date().toISOString();
  await new Promise((resolve) => setTimeout(resolve, 20));
}, 120_000);

afterAll(async () => {
  await server?.kill();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

describe('csr privacy', () => {
  it('encrypts personal values in the log: the event store file never holds them', async () => {
    expect((await api.get(`/api/v1/contacts/${contact}`)).body.data).toMatchObject({ email: EMAIL, phone: PHONE });
    const log = new Sqlite(join(dataDir, 'events.db'), { readonly: true });
    const rows = log.prepare("SELECT data FROM events WHERE stream = ?").all(`record-${contact}`) as { data: string }[];
    log.close();
    expect(rows).toHaveLength(50);
    expect(rows.map((row) => row.data).join('\n')).not.toContain(EMAIL);
    expect(rows.map((row) => row.data).join('\n')).not.toContain(PHONE);
    expect(rows.map((row) => row.data).join('\n')).not.toContain('Erasable');
    const log2 = new Sqlite(join(dataDir, 'events.db'), { readonly: true });
    const clientRow = log2.prepare('SELECT data FROM events WHERE stream = ?').get(`record-${ownedClient}`) as { data: string };
    log2.close();
    // A custom field marked --personal is sealed too; the client's other fields are not.
    expect(clientRow.data).not.toContain(EMAIL);
    expect(clientRow.data).toContain('Owned Inc');
    // The read models hold plaintext (they are rebuilt from the log): the scan below can find it.
    expect(filesHolding(EMAIL).length).toBeGreaterThan(0);
  });

  it('finds and exports everything held about the person', async () => {
    const found = await csr.json<{ object: string; id: string }[]>('privacy', 'find', '--workspace', slug, '--email', EMAIL.toUpperCase());
    expect(found.map((record) => record.id).sort()).toEqual([contact, ...conversations, survey, ownedClient].sort());
    expect(found.find((record) => record.id === ownedClient)).toMatchObject({ object: 'clients', why: 'field ownerEmail holds the email' });
    const exported = await csr.json<{ records: { id: string; record: Record<string, unknown>; history: unknown[] }[] }>('privacy', 'export', '--workspace', slug, '--contact', contact);
    expect(exported.records.find((record) => record.id === contact)!.record).toMatchObject({ email: EMAIL });
    expect(exported.records.find((record) => record.id === contact)!.history).toHaveLength(50);
    expect(await csr.fails(1, 'privacy', 'find', '--workspace', slug, '--email', 'not-an-email')).toMatch(/not an email address/);
  });

  it('erases the contact, the conversations that link or linked it and the survey; every read shows null', async () => {
    const backup = join(elsewhere, 'before.tar');
    await csr.json('backup', backup);
    const result = await csr.json<{ erased: { object: string; id: string; fields: string[] }[]; erasedAt: string }>('privacy', 'erase', '--workspace', slug, '--contact', contact, '--reason', 'GDPR request 42');
    erasedOnce = true;
    const returnedAt = Date.now();
    expect(result.erased.map((record) => record.id).sort()).toEqual([contact, ...conversations, survey, ownedClient].sort());
    expect(result.erased.find((record) => record.id === contact)!.fields).toEqual(['firstName', 'lastName', 'email', 'phone', 'notes']);

    // Nothing left on disk the moment the command returns.
    expect(filesHolding(EMAIL)).toEqual([]);
    expect(filesHolding(PHONE)).toEqual([]);

    const got = (await api.get(`/api/v1/contacts/${contact}`)).body.data;
    expect(got).toMatchObject({ firstName: null, lastName: null, email: null, phone: null, notes: null, role: 'Buyer 48' });
    expect((await api.get(`/api/v1/contacts?email=${encodeURIComponent(EMAIL)}`)).body.total).toBe(0);
    expect((await api.get(`/api/v1/contacts/${kept}`)).body.data).toMatchObject({ email: 'kim.kept@example.com' });
    expect((await api.get(`/api/v1/contacts/${contact}?as_of=${before}`)).body.data).toMatchObject({ email: null, phone: null, role: 'Buyer 48' });
    for (const id of conversations) expect((await api.get(`/api/v1/conversations/${id}`)).body.data).toMatchObject({ from: null, content: null });
    expect((await api.get(`/api/v1/surveys/${survey}`)).body.data).toMatchObject({ comment: null, score: 9 });
    expect((await api.get(`/api/v1/clients/${ownedClient}`)).body.data).toMatchObject({ ownerEmail: null, name: 'Owned Inc', industry: 'Retail' });

    type Entry = { event: string; occurredAt: string; erased?: string[]; erasedAt?: string; reason?: string | null; changes: Record<string, unknown> };
    const history = (await api.get(`/api/v1/contacts/${contact}/history?limit=100`)).body.data as Entry[];
    expect(history).toHaveLength(51);
    const personal = ['email', 'firstName', 'lastName', 'notes', 'phone'];
    // The erasure is an entry of its own: when, why, which fields (issue 39 item 12).
    const erasure = history.at(-1)!;
    expect(erasure).toMatchObject({ event: 'erased', erased: personal, reason: 'GDPR request 42', erasedAt: erasure.occurredAt });
    expect(Object.keys(erasure.changes).sort()).toEqual(personal);
    // The first revision shows that it set the fields whose values were erased since, and when
    // they were: not a change from nothing to nothing.
    expect(history[0]).toMatchObject({ event: 'created', erased: personal, erasedAt: erasure.occurredAt });
    expect(history[0]!.changes).toEqual({
      firstName: { erased: true },
      lastName: { erased: true },
      email: { erased: true },
      phone: { erased: true },
      role: { from: null, to: 'Buyer' },
      notes: { erased: true },
    });
    expect(history[1]).toMatchObject({ event: 'updated', erased: ['notes'], erasedAt: erasure.occurredAt, changes: { notes: { erased: true } } });
    expect(history[2]).toMatchObject({ event: 'updated', changes: { role: { from: 'Buyer', to: 'Buyer 2' } } });
    expect(history[2]).not.toHaveProperty('erased');
    expect(history[2]).not.toHaveProperty('erasedAt');
    expect(JSON.stringify(history)).not.toContain('"from":null,"to":null');
    expect(JSON.stringify(history)).not.toContain(PHONE);
    // `csr history` says the same in its text form.
    const text = (await csr.run('history', 'contacts', contact, '--workspace', slug)).stdout.split('\n');
    expect(text.slice(0, 7)).toEqual([
      expect.stringMatching(/^\S+Z  created  crm  via API · crm$/),
      `    firstName: erased ${erasure.occurredAt}`,
      `    lastName: erased ${erasure.occurredAt}`,
      '    role: - -> Buyer',
      `    email: erased ${erasure.occurredAt}`,
      `    phone: erased ${erasure.occurredAt}`,
      `    notes: erased ${erasure.occurredAt}`,
    ]);
    expect(text.filter((line) => line.includes('  erased  '))).toEqual([expect.stringMatching(new RegExp(`^${erasure.occurredAt}  erased  .* reason: GDPR request 42$`))]);

    const exported = await csr.run('privacy', 'export', '--workspace', slug, '--contact', contact, '--json');
    expect(exported.code).toBe(0);
    expect(exported.stdout).not.toContain(EMAIL);
    expect(exported.stdout).not.toContain(PHONE);

    const audit = await csr.run('audit', 'export', '--workspace', slug);
    expect(audit.code).toBe(0);
    expect(audit.stdout).not.toContain(EMAIL);
    expect(audit.stdout).not.toContain(PHONE);
    const erasedLines = audit.stdout.split('\n').filter((line) => line.includes('RecordErased'));
    expect(erasedLines).toHaveLength(5);
    expect(erasedLines.join('\n')).toContain('GDPR request 42');

    // Consumers are told: <object>.updated from the app with the fields null; retried deliveries carry null too.
    const updated = await receiver.waitFor('/up', (requests) => requests.some((r) => r.body?.event === 'contacts.updated' && r.body?.data?.email === null), 60_000);
    expect(updated.find((r) => r.body?.event === 'contacts.updated' && r.body?.data?.email === null)!.body).toMatchObject({ source: 'app' });
    // (A request already on its way when the command returned may still carry the old body: see docs/privacy.md.)
    const retried = await receiver.waitFor('/down', (requests) => requests.some((r) => r.receivedAt > returnedAt + 1000 && r.body?.data?.id === contact), 60_000);
    const afterErasure = retried.filter((r) => r.receivedAt > returnedAt + 1000);
    expect(afterErasure.map((r) => r.rawBody).join('\n')).not.toContain(EMAIL);
    expect(afterErasure.map((r) => r.rawBody).join('\n')).not.toContain(PHONE);

    const verify = await csr.run('audit', 'verify', '--json');
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, firstBreak: null });
  }, 120_000);

  it('erasing twice is a no-op; an unknown contact or a malformed email is a clear error (exit 1)', async () => {
    const again = await csr.json<{ erased: unknown[] }>('privacy', 'erase', '--workspace', slug, '--contact', contact);
    expect(again.erased).toEqual([]);
    expect(await csr.fails(1, 'privacy', 'erase', '--workspace', slug, '--contact', '00000000-0000-4000-8000-000000000000')).toMatch(/contact 00000000-0000-4000-8000-000000000000 not found/);
    expect(await csr.fails(1, 'privacy', 'erase', '--workspace', slug, '--email', 'nobody@example.com')).toMatch(/no contact with the email nobody@example.com/);
    expect(await csr.fails(1, 'privacy', 'erase', '--workspace', slug, '--email', 'not an email')).toMatch(/not an email address/);
  }, 60_000);

  it('a backup made before the erasure, restored with the ledger, keeps the person erased; a rebuild agrees', async () => {
    const ledger = await csr.json<{ recordId: string; erasedAt: string }[]>('privacy', 'erasures', '--workspace', slug);
    expect(ledger.map((entry) => entry.recordId).sort()).toEqual([contact, ...conversations, survey, ownedClient].sort());
    expect(JSON.stringify(ledger)).not.toContain(EMAIL);
    const ledgerFile = join(elsewhere, 'ledger.json');
    writeFileSync(ledgerFile, JSON.stringify(ledger));
    const shown = (await api.get(`/api/v1/contacts/${contact}`)).body.data;
    await server!.kill('SIGTERM');
    server = undefined;
    const restored = await csr.json<{ reapplied: number }>('restore', join(elsewhere, 'before.tar'), '--reapply-erasures', ledgerFile);
    expect(restored.reapplied).toBe(5);
    expect(filesHolding(EMAIL)).toEqual([]);
    expect(filesHolding(PHONE)).toEqual([]);
    server = await spawnServer({ DATA_DIR: dataDir, ...ENV });
    api = client(server.url, key);
    expect((await api.get(`/api/v1/contacts/${contact}`)).body.data).toMatchObject({ email: null, phone: null, firstName: null });
    expect((await api.get(`/api/v1/surveys/${survey}`)).body.data).toMatchObject({ comment: null });
    const rebuild = await csr.run('projections', 'rebuild', 'records');
    expect(rebuild.code, rebuild.stderr).toBe(0);
    const rebuilt = (await api.get(`/api/v1/contacts/${contact}`)).body.data;
    expect(rebuilt).toMatchObject({ email: null, phone: null, firstName: null, lastName: null, notes: null, role: shown.role });
    expect((await api.get(`/api/v1/contacts/${kept}`)).body.data).toMatchObject({ email: 'kim.kept@example.com' });
    const verify = await csr.run('audit', 'verify', '--json');
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  }, 180_000);

  it('audit verify still catches an edited event after the erasure', async () => {
    await server!.kill('SIGTERM');
    server = undefined;
    const log = new Sqlite(join(dataDir, 'events.db'));
    const target = log.prepare("SELECT seq FROM events WHERE stream = ? AND type = 'RecordErased'").get(`record-${contact}`) as { seq: number };
    log.prepare("UPDATE events SET data = json_set(data, '$.reason', 'edited') WHERE seq = ?").run(target.seq);
    log.close();
    const broken = await csr.run('audit', 'verify');
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`chain broken at position ${String(target.seq).padStart(20, '0')}`);
  }, 60_000);
});

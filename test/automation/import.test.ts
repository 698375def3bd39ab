import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import { csrTool, type Csr } from '../support/cli.js';
import { teamWorkspace } from '../support/automation.js';
import type { ApiClient } from '../support/service.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';
import { eventually } from '../support/until.js';

/**
 * `csr import` (issue 26) as an operator runs it, against a running service: every value format,
 * labels as headers, per-row errors with row numbers and exit code 1, --dry-run, re-runs that
 * change nothing, a BOM, other encodings refused, bulk webhooks with source import.
 */

let h: WebhookHarness;
let csr: Csr;
const dir = mkdtempSync(join(tmpdir(), 'csr-import-'));

beforeAll(async () => {
  h = await startWebhookHarness();
  csr = csrTool(h.svc.dataDir);
});

afterAll(async () => {
  await h?.close();
});

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

type Result = { created: number; updated: number; errors: { row: number; message: string }[] };

async function importJson(...args: string[]): Promise<{ code: number | null; result: Result; stderr: string }> {
  const run = await csr.run('import', ...args, '--json');
  return { code: run.code, result: JSON.parse(run.stdout || 'null'), stderr: run.stderr };
}

const byName = async (api: ApiClient, object: string, name: string) => {
  const query = object === 'contacts' ? `firstName=${encodeURIComponent(name.split(' ')[0]!)}` : `name=${encodeURIComponent(name)}`;
  return (await api.get(`/api/v1/${object}?${query}`)).body.data[0];
};

describe('csr import', () => {
  it('imports every value format, with keys or labels as headers, links and people by name, email or id', async () => {
    const { ws, api, ana, bo } = await teamWorkspace(h.svc);
    const clients = file(
      'clients.csv',
      [
        'Name,Tier,ARR,Renewal date,Website,Account owner,notes',
        'Globex,Enterprise,120000.5,2027-01-31,https://globex.test,ana@x.test,"Line one\nline two, with a comma"',
        `Initech,SMB,0,,,${bo},`,
        'Hooli,Mid-Market,,,,Bo Chen,',
      ].join('\n'),
    );
    const first = await importJson('clients', clients, '--workspace', ws.slug);
    expect(first).toMatchObject({ code: 0, result: { created: 3, updated: 0, errors: [] } });
    expect(await byName(api, 'clients', 'Globex')).toMatchObject({
      tier: 'Enterprise',
      arr: 120000.5,
      renewalDate: '2027-01-31',
      website: 'https://globex.test',
      owner: { id: ana, name: 'Ana Lima' },
      notes: 'Line one\nline two, with a comma',
      clientNumber: expect.stringMatching(/^CL-\d{5}$/),
    });
    expect((await byName(api, 'clients', 'Initech')).owner).toEqual({ id: bo, name: 'Bo Chen' });
    const globexId = (await byName(api, 'clients', 'Globex')).id;

    const contacts = file(
      'contacts.csv',
      ['firstName,lastName,client,isPrimary,email', `Sam,Smith,globex,yes,sam@globex.test`, `Kim,Lee,${globexId},0,`, 'Lou,Ng,Hooli,TRUE,', 'Max,Mo,,no,'].join('\n'),
    );
    expect((await importJson('contacts', contacts, '--workspace', ws.slug)).result).toEqual({ created: 4, updated: 0, errors: [] });
    expect(await byName(api, 'contacts', 'Sam Smith')).toMatchObject({ client: { id: globexId }, isPrimary: true, email: 'sam@globex.test' });
    expect(await byName(api, 'contacts', 'Kim Lee')).toMatchObject({ client: { id: globexId }, isPrimary: false });
    expect(await byName(api, 'contacts', 'Lou Ng')).toMatchObject({ isPrimary: true });

    const conversations = file(
      'conversations.csv',
      ['subject,client,contacts,date,channel,owner', 'Kickoff call,Globex,Sam Smith; Kim Lee,2026-03-01T10:00:00Z,Phone,Ana Lima'].join('\n'),
    );
    expect((await importJson('conversations', conversations, '--workspace', ws.slug)).result).toEqual({ created: 1, updated: 0, errors: [] });
    const conversation = (await api.get('/api/v1/conversations')).body.data[0];
    expect(conversation.contacts.map((contact: { name: string }) => contact.name)).toEqual(['Sam Smith', 'Kim Lee']);
    expect(conversation).toMatchObject({ date: '2026-03-01T10:00:00.000Z', channel: 'Phone', owner: { id: ana } });

    const templates = file('templates.csv', ['name,Active,triggerType,triggerDays', 'A,1,Manually,', 'B,No,Days before a date,30'].join('\n'));
    expect((await importJson('playbookTemplates', templates, '--workspace', ws.slug)).result.created).toBe(2);
    expect(await byName(api, 'playbookTemplates', 'A')).toMatchObject({ active: true });
    expect(await byName(api, 'playbookTemplates', 'B')).toMatchObject({ active: false, triggerDays: 30 });
  });

  it('reports each failed row with its number, saves the others and exits 1', async () => {
    const { ws, api } = await teamWorkspace(h.svc);
    const path = file(
      'errors.csv',
      ['name,tier,arr,owner,renewalDate', 'Good One,SMB,1,,', 'Bad Tier,Mega,1,,', 'Bad Number,SMB,lots,,', ',SMB,1,,', 'Bad Owner,SMB,1,nobody@x.test,', 'Bad Date,SMB,1,,2027-02-30', 'Good Two,,,,'].join('\n'),
    );
    const { code, result } = await importJson('clients', path, '--workspace', ws.slug);
    expect(code).toBe(1);
    expect(result.created).toBe(2);
    expect(result.errors.map((error) => error.row)).toEqual([3, 4, 5, 6, 7]);
    expect(result.errors[0]!.message).toContain('Mega');
    expect(result.errors[1]!.message).toContain('arr');
    expect(result.errors[2]!.message).toContain('name');
    expect(result.errors[3]!.message).toContain('nobody@x.test');
    expect(result.errors[4]!.message).toContain('renewalDate');
    expect((await api.get('/api/v1/clients')).body.total).toBe(2);
    // Without --json: the rows on stdout, exit 1.
    const text = await csr.run('import', 'clients', path, '--workspace', ws.slug);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('row 3: tier');
  });

  it('refuses a file whose header names no field, or that is not UTF-8, before writing anything', async () => {
    const { ws, api } = await teamWorkspace(h.svc);
    const unknown = await csr.fails(1, 'import', 'clients', file('unknown.csv', 'name,colour\nA,red\n'), '--workspace', ws.slug);
    expect(unknown).toContain('column "colour" is not a field of clients');
    const readOnly = await csr.fails(1, 'import', 'clients', file('ro.csv', 'name,healthScore\nA,5\n'), '--workspace', ws.slug);
    expect(readOnly).toContain('read only');
    const latin1 = await csr.fails(1, 'import', 'clients', file('latin1.csv', Buffer.from('name\nCaf\xe9 Noir\n', 'latin1')), '--workspace', ws.slug);
    expect(latin1).toContain('not UTF-8');
    const utf16 = await csr.fails(1, 'import', 'clients', file('utf16.csv', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('name\nA\n', 'utf16le')])), '--workspace', ws.slug);
    expect(utf16).toContain('UTF-16');
    const broken = await csr.fails(1, 'import', 'clients', file('quote.csv', 'name,notes\nA,"never closed\n'), '--workspace', ws.slug);
    expect(broken).toContain('not valid CSV');
    expect((await api.get('/api/v1/clients')).body.total).toBe(0);
  });

  it('reads a UTF-8 file with a byte order mark', async () => {
    const { ws, api } = await teamWorkspace(h.svc);
    const path = file('bom.csv', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('name,notes\r\nCafé Noir,Crème brûlée\r\n')]));
    expect((await importJson('clients', path, '--workspace', ws.slug)).result).toEqual({ created: 1, updated: 0, errors: [] });
    expect(await byName(api, 'clients', 'Café Noir')).toMatchObject({ notes: 'Crème brûlée' });
  });

  it('--dry-run validates and matches every row and writes nothing', async () => {
    const { ws, api } = await teamWorkspace(h.svc);
    await importJson('clients', file('seed.csv', 'name\nExisting\n'), '--workspace', ws.slug);
    // The seed's health score is appended a moment later: let it land before taking the log's head.
    await eventually(() => byName(api, 'clients', 'Existing'), (existing) => existing.healthScore !== null, 30_000, 'the seed\'s health score');
    expect((await byName(api, 'clients', 'Existing')).healthScore).toBe(85);
    // And anything else the seed set off: the head taken once it has stood still for 300 ms.
    const { events } = h.svc.service.backends;
    let head = await events.headPosition();
    for (const deadline = Date.now() + 30_000; ; ) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const now = await events.headPosition();
      if (now === head) break;
      if (Date.now() > deadline) throw new Error('the log did not come to rest within 30 s');
      head = now;
    }
    const { code, result } = await importJson('clients', file('dry.csv', 'name,tier\nExisting,SMB\nNew One,SMB\nBroken,Mega\n'), '--workspace', ws.slug, '--dry-run');
    expect(code).toBe(1);
    expect(result).toEqual({ created: 1, updated: 1, errors: [{ row: 4, message: expect.stringContaining('Mega') }], dryRun: true });
    // Without --json the counts say what a real run would do, not what was done.
    const text = await csr.run('import', 'clients', file('dry-text.csv', 'name\nNew Two\n'), '--workspace', ws.slug, '--dry-run');
    expect([text.code, text.stdout]).toEqual([0, 'would create: 1\nwould update: 0\nerrors:       0\n(a dry run: nothing was written)\n']);
    expect((await api.get('/api/v1/clients')).body.total).toBe(1);
    expect((await byName(api, 'clients', 'Existing')).tier).toBeNull();
    expect(await h.svc.service.backends.events.headPosition()).toBe(head);
  });

  it('re-running a file, or an interrupted one, changes nothing already imported; --match chooses the key', async () => {
    const { ws, api } = await teamWorkspace(h.svc);
    const rows = Array.from({ length: 30 }, (_, i) => `Rerun ${i},SMB,${i}`);
    const half = file('half.csv', ['name,tier,arr', ...rows.slice(0, 12)].join('\n'));
    const full = file('full.csv', ['name,tier,arr', ...rows].join('\n'));
    expect((await importJson('clients', half, '--workspace', ws.slug)).result).toMatchObject({ created: 12, errors: [] });
    expect((await importJson('clients', full, '--workspace', ws.slug)).result).toMatchObject({ created: 18, updated: 12, errors: [] });
    const imported = (await api.get('/api/v1/clients?limit=100')).body.data;
    expect(imported).toHaveLength(30);
    const streams = await Promise.all(imported.map((record: { id: string }) => h.svc.service.backends.events.readStream(recordStream(record.id))));
    const importEvents = (events: { metadata: { source: string } }[]) => events.filter((event) => event.metadata.source === 'import').length;
    const before = streams.map(importEvents);
    expect(before.every((count) => count === 1)).toBe(true);
    expect((await importJson('clients', full, '--workspace', ws.slug)).result).toMatchObject({ created: 0, updated: 30, errors: [] });
    const after = await Promise.all(imported.map((record: { id: string }) => h.svc.service.backends.events.readStream(recordStream(record.id))));
    expect(after.map(importEvents)).toEqual(before);
    // --match: the clientNumber given updates that client whatever its name.
    const number = imported[0].clientNumber;
    const renamed = await importJson('clients', file('match.csv', `clientNumber,name\n${number},Renamed\n`), '--workspace', ws.slug, '--match', 'clientNumber');
    expect(renamed.result).toMatchObject({ created: 0, updated: 1 });
    expect((await api.get(`/api/v1/clients/${imported[0].id}`)).body.data.name).toBe('Renamed');
  });

  it('each batch is one action: more than 20 rows become bulk events with source import and the file as actor', async () => {
    const { ws } = await teamWorkspace(h.svc);
    await h.svc.webhooks.create(ws.slug, { name: 'imports', url: `${h.receiver.origin}/import-bulk`, objects: ['contacts'] });
    const path = file('people.csv', ['firstName,lastName', ...Array.from({ length: 25 }, (_, i) => `Person,${i}`)].join('\n'));
    expect((await importJson('contacts', path, '--workspace', ws.slug)).result.created).toBe(25);
    const [bulk] = await h.receiver.waitFor('/import-bulk', (all) => all.length >= 1);
    expect(bulk!.body).toMatchObject({ event: 'contacts.created.bulk', source: 'import', data: { count: 25 } });
    const [event] = await h.svc.service.backends.events.readStream(recordStream(bulk!.body.data.ids[0]));
    expect(event!.metadata).toMatchObject({ source: 'import', actor: { name: 'people.csv' } });
    const history = await csr.json<{ via: string }[]>('history', 'contacts', bulk!.body.data.ids[0], '--workspace', ws.slug);
    expect(history[0]!.via).toBe('via import · people.csv');
  });
});

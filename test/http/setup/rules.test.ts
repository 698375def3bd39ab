import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceStream } from '../../../src/events/workspace.js';
import { csrTool } from '../../support/cli.js';
import { client, startTestService, type TestService, type TestWorkspace } from '../../support/service.js';
import { csrfOf, pageClient, signInLink } from '../../support/setupPage.js';

/** The Setup page's rules through its public surface: headers, CSRF, bad input, audit, workspaces apart. */

let svc: TestService;
let ws: TestWorkspace;
let page: ReturnType<typeof pageClient>;
const dataDir = mkdtempSync(join(tmpdir(), 'csr-setup-page-'));

beforeAll(async () => {
  svc = await startTestService({}, { dataDir });
  ws = await svc.workspace();
  await ws.addUser('Ana Admin', 'ana@example.com');
  page = pageClient(svc);
  await page.get(await signInLink(svc, ws.slug, { email: 'ana@example.com' }));
});
afterAll(async () => {
  await svc?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const keyNames = async () => (await svc.service.backends.setup.listKeys(ws.id)).map((key) => key.name);

describe('the Setup page', () => {
  it('sends its security headers on every page, under 50 KB, with no other host named', async () => {
    for (const path of ['/setup/api', '/setup/objects', '/setup/objects/clients', '/setup/projections', '/setup/sign-in?token=x']) {
      const answer = await page.get(path);
      const csp = answer.headers.get('Content-Security-Policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(answer.headers.get('X-Frame-Options')).toBe('DENY');
      expect(answer.headers.get('Referrer-Policy')).toBe('no-referrer');
      expect(answer.headers.get('Content-Type')).toContain('text/html');
      expect(Buffer.byteLength(answer.html)).toBeLessThan(50 * 1024);
      expect(answer.html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
      expect(answer.html).not.toMatch(/<script>|<style>| on\w+=/);
    }
    expect((await page.get('/setup/assets/setup.css')).headers.get('Content-Type')).toContain('text/css');
  });

  it('refuses a POST without the CSRF token, or with another session\'s, and changes nothing', async () => {
    const without = await page.post('/setup/keys', { name: 'no token' }, { csrf: false });
    expect(without.status).toBe(403);
    expect(without.html).toContain('nothing was changed');
    const other = pageClient(svc);
    await other.get(await signInLink(svc, ws.slug));
    const foreign = await page.post('/setup/keys', { name: 'foreign token' }, { csrf: csrfOf((await other.get('/setup/api')).html) });
    expect(foreign.status).toBe(403);
    expect(await keyNames()).not.toContain('no token');
    expect(await keyNames()).not.toContain('foreign token');
  });

  it('creates a key shown once that works against the API; the audit trail says who, via app', async () => {
    const created = await page.post('/setup/keys', { name: 'Zapier', objects: 'clients' });
    expect(created.status).toBe(200);
    const key = /id="new-key" type="text" readonly="" value="([^"]+)"/.exec(created.html)?.[1];
    expect(key).toBeDefined();
    expect((await client(svc, key!).get('/api/v1/clients')).status).toBe(200);
    expect((await page.get('/setup/api')).html).not.toContain(key!);
    const events = await svc.service.backends.events.readStream(workspaceStream(ws.id), { direction: 'backwards', maxCount: 5 });
    const audit = events.find((event) => event.type === 'ApiKeyCreated')!;
    expect(audit.metadata).toMatchObject({ source: 'app', actor: { type: 'user', name: 'Ana Admin' } });
  });

  it('gives a refused form back with its values and the message next to the field', async () => {
    const refused = await page.post('/setup/keys', { name: '   ', objects: 'clients' });
    expect(refused.status).toBe(422);
    expect(refused.html).toMatch(/id="key-name-error">the key name must not be empty</);
    expect(refused.html).toMatch(/value="clients" checked=""/);
    const badObject = await page.post('/setup/objects', { key: 'Bad Key!', name: 'Kept name' });
    expect(badObject.status).toBe(422);
    expect(badObject.html).toContain('value="Kept name"');
    expect(badObject.html).toContain('class="error"');
  });

  it('the SSRF guard refuses a loopback webhook URL on the page (next to the field) and through csr alike', async () => {
    const url = 'https://127.0.0.1:9/hook';
    const refused = await page.post('/setup/webhooks', { name: 'Internal', url, events: ['created'] });
    expect(refused.status).toBe(422);
    const message = /id="webhook-url-error">([^<]+)</.exec(refused.html)?.[1];
    expect(message).toMatch(/^the webhook url is refused: /);
    expect(refused.html).toContain(`value="${url}"`);
    expect(refused.html).toContain('value="Internal"');
    const stderr = await csrTool(dataDir).fails(1, 'webhooks', 'create', '--workspace', ws.slug, '--name', 'Internal', '--url', url);
    expect(stderr.trim()).toBe(`csr: ${message!.replaceAll('&quot;', '"').replaceAll('&#39;', "'")}`);
    expect(await svc.webhooks.list(ws.slug)).toEqual([]);
  });

  it('renames a key; an empty name comes back next to that key, nothing renamed', async () => {
    const { record } = await ws.key({ name: 'Old name' });
    expect((await page.post(`/setup/keys/${record.id}/rename`, { name: 'New name' })).status).toBe(303);
    expect((await svc.service.backends.setup.keyById(record.id))?.name).toBe('New name');
    const refused = await page.post(`/setup/keys/${record.id}/rename`, { name: ' ' });
    expect(refused.status).toBe(422);
    expect(refused.html).toContain('the key name must not be empty');
    expect((await svc.service.backends.setup.keyById(record.id))?.name).toBe('New name');
  });

  it("cannot reach another workspace's key or webhook", async () => {
    const other = await svc.workspace();
    const { record } = await other.key({ name: 'Theirs' });
    const confirm = await page.get(`/setup/keys/${record.id}/revoke`);
    expect(confirm.status).toBe(404);
    expect((await page.post(`/setup/keys/${record.id}/revoke`, {})).status).toBe(404);
    expect((await svc.service.backends.setup.keyById(record.id))?.revokedAt).toBeNull();
  });

  it('revokes a key after a confirmation page; the API refuses it on the next request', async () => {
    const { key, record } = await ws.key({ name: 'To revoke' });
    const confirm = await page.get(`/setup/keys/${record.id}/revoke`);
    expect(confirm.html).toContain('cannot be undone');
    const revoked = await page.post(`/setup/keys/${record.id}/revoke`, {});
    expect(revoked.status).toBe(303);
    expect((await client(svc, key).get('/api/v1/clients')).status).toBe(401);
  });

  it('adds an object and a field, and deactivates the field, as csr objects/fields do', async () => {
    expect((await page.post('/setup/objects', { key: 'projects', name: 'Projects' })).status).toBe(303);
    expect((await page.post('/setup/objects/projects/fields', { key: 'stage', format: 'oneOf', options: 'Draft, Live', required: 'yes' })).status).toBe(303);
    const fields = await page.get('/setup/objects/projects');
    expect(fields.html).toContain('One of: Draft, Live');
    expect((await page.post('/setup/objects/projects/fields/stage/deactivate', {})).status).toBe(303);
    expect((await svc.objects.listFields(ws.slug, 'projects')).find((field) => field.key === 'stage')).toMatchObject({ active: false });
    const refused = await page.post('/setup/objects/projects/fields', { key: 'size', format: 'text', options: 'A' });
    expect(refused.status).toBe(422);
    expect(refused.html).toContain('value="A"');
  });

  it('shows the projections status table', async () => {
    const answer = await page.get('/setup/projections');
    expect(answer.status).toBe(200);
    expect(answer.html).toContain('<td>records</td>');
  });
});

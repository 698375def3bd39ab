import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { RECEIVER_CA_FILE, startReceiver, type Receiver } from '../support/receiver.js';
import { startTestService, type TestService, type TestWorkspace } from '../support/service.js';
import { signInLink } from '../support/setupPage.js';

/**
 * The Setup page end to end in a real browser: Debian's Chromium driven by playwright-core (the
 * Playwright browser download cannot be used here; .ci/run installs the `chromium` package). The
 * screenshots in docs/setup.md are taken here. Without Chromium the suite is skipped and says so.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present) console.warn(`skipped: no Chromium at ${CHROMIUM} (Setup page browser tests; apt-get install chromium)`);
// Taken on every run; kept in docs/ only when asked (CSR_SCREENSHOTS=docs), so a test run leaves the tree as it was.
const SHOTS = process.env.CSR_SCREENSHOTS === 'docs' ? fileURLToPath(new URL('../../docs/setup/', import.meta.url)) : join(tmpdir(), 'csr-setup-screenshots');

let svc: TestService;
let ws: TestWorkspace;
let receiver: Receiver;
let browser: Browser;
const dataDir = mkdtempSync(join(tmpdir(), 'csr-setup-e2e-'));

/**
 * Clicks what navigates, and waits until the new page has loaded. A click returns once the new
 * document is committed, which may be before the browser has parsed all of it (or run its
 * deferred script): a read made then (isVisible, a table's text) can see half a page on a slow
 * or busy machine.
 */
async function navigate(page: Page, target: Locator): Promise<void> {
  await target.click();
  await page.waitForLoadState('load');
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

describe.skipIf(!present)('the Setup page in Chromium', () => {
  beforeAll(async () => {
    receiver = await startReceiver();
    svc = await startTestService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE }, { dataDir });
    ws = await svc.workspace('acme');
    await ws.addUser('Ana Admin', 'ana@example.com');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('signs in with a csr link, makes a key and uses it, sends a webhook test, switches it off, rotates its secret, revokes the key', async () => {
    const { url: link } = await csrTool(dataDir).json<{ url: string }>('setup', 'link', '--workspace', 'acme', '--user', 'ana@example.com', '--url', svc.url);
    const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
    const page = await context.newPage();
    await page.goto(link);
    await page.waitForURL(`${svc.url}/setup/api`);
    expect(await page.getByText('Signed in as Ana Admin').isVisible()).toBe(true);
    expect(await page.textContent('h1')).toBe('API & Webhooks');

    await page.getByLabel('Name', { exact: true }).first().fill('Zapier');
    await navigate(page, page.getByRole('button', { name: 'Create key' }));
    const key = await page.locator('#new-key').inputValue();
    expect(key).not.toBe('');
    // The copy button is shown by a deferred script, which may run after the key's field is there.
    await page.locator('button.copy').waitFor({ state: 'visible', timeout: 10_000 });
    await shot(page, 'api-keys');
    const api = (value: string) => fetch(`${svc.url}/api/v1/clients`, { headers: { Authorization: `Bearer ${value}` } });
    expect((await api(key)).status).toBe(200);

    const webhookForm = page.locator('form[action="/setup/webhooks"]');
    await webhookForm.getByLabel('Name').fill('CRM sync');
    await webhookForm.getByLabel('URL (https)').fill(`${receiver.origin}/hook`);
    await webhookForm.getByLabel('created').check();
    await navigate(page, webhookForm.getByRole('button', { name: 'Create webhook' }));
    expect(await page.locator('#new-secret').inputValue()).toMatch(/^whsec_/);
    await page.locator('#webhooks').evaluate((heading) => heading.scrollIntoView());
    await shot(page, 'webhooks');

    await navigate(page, page.getByRole('link', { name: 'CRM sync' }).first());
    await navigate(page, page.getByRole('button', { name: 'Send test event' }));
    expect(await page.getByRole('status').textContent()).toContain('Test event: delivered, response 204');
    expect(receiver.received('/hook').map((request) => request.body?.event)).toEqual(['webhook.test']);
    expect(await page.locator('table tbody tr').first().textContent()).toContain('webhook.test');
    await shot(page, 'webhook');

    await navigate(page, page.locator('table tbody tr a').first());
    expect(await page.locator('pre').first().textContent()).toContain('X-SVC-Delivery');
    expect(await page.locator('pre').nth(1).textContent()).toContain('"event": "webhook.test"');
    await shot(page, 'delivery');
    await navigate(page, page.getByRole('link', { name: /Webhook CRM sync/ }));

    await navigate(page, page.getByRole('button', { name: 'Switch off' }));
    expect(await page.locator('dd .off').textContent()).toContain('off');
    expect(await page.getByRole('button', { name: 'Switch on' }).isVisible()).toBe(true);
    await navigate(page, page.getByRole('button', { name: 'Rotate secret' }));
    const secret = await page.locator('#new-secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect((await svc.service.backends.webhooks.webhookById((await svc.webhooks.list('acme'))[0]!.id))?.secret).toBe(secret);

    await navigate(page, page.getByRole('link', { name: 'API & Webhooks', exact: true }));
    await navigate(page, page.getByRole('link', { name: 'Revoke…' }));
    await navigate(page, page.getByRole('button', { name: 'Revoke the key' }));
    expect(await page.getByRole('status').textContent()).toContain('The key is revoked');
    expect((await api(key)).status).toBe(401);

    await navigate(page, page.getByRole('link', { name: 'Object Manager', exact: true }));
    await page.getByLabel('Key').fill('projects');
    await page.getByLabel('Name').last().fill('Projects');
    await navigate(page, page.getByRole('button', { name: 'Add object' }));
    await navigate(page, page.getByRole('link', { name: '← Object Manager' }));
    await shot(page, 'object-manager');
    await navigate(page, page.getByRole('link', { name: 'Projects' }));
    await page.getByLabel('Key').fill('stage');
    await page.getByLabel('Format').selectOption('oneOf');
    await page.getByLabel(/Options/).fill('Draft, Live');
    await navigate(page, page.getByRole('button', { name: 'Add field' }));
    expect(await page.locator('table').textContent()).toContain('One of: Draft, Live');
    await shot(page, 'fields');
    await navigate(page, page.getByRole('link', { name: 'Projections', exact: true }));
    expect(await page.locator('table').textContent()).toContain('records');
    await shot(page, 'projections');

    await navigate(page, page.getByRole('button', { name: 'Sign out' }));
    expect(await page.textContent('h1')).toBe('Signed out');
    await page.goto(`${svc.url}/setup/api`);
    expect(await page.textContent('h1')).toBe('Not signed in');
    await context.close();
  }, 120_000);

  it('works with JavaScript off (the key is still shown once, without the copy button); a reused and an expired sign-in link are refused', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const link = `${svc.url}${await signInLink(svc, 'acme')}`;
    await page.goto(link);
    await page.waitForURL(`${svc.url}/setup/api`);
    await page.getByLabel('Name', { exact: true }).first().fill('No script');
    await navigate(page, page.getByRole('button', { name: 'Create key' }));
    expect(await page.locator('#new-key').inputValue()).not.toBe('');
    // On the whole page (loaded): the button is there, and stays hidden without its script.
    expect(await page.locator('button.copy').count()).toBe(1);
    expect(await page.locator('button.copy').isVisible()).toBe(false);
    const again = await (await context.newPage()).goto(link);
    expect(again?.status()).toBe(401);
    expect(await again?.text()).toContain('already used');
    const expired = `${svc.url}${await signInLink(svc, 'acme', { clock: () => new Date(Date.now() - 16 * 60_000) })}`;
    const late = await (await browser.newPage()).goto(expired);
    expect(late?.status()).toBe(401);
    expect(await late?.text()).toContain('expired');
    await context.close();
  });

  it('refuses a form sent without its CSRF token, and nothing changes', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${svc.url}${await signInLink(svc, 'acme')}`);
    await page.waitForURL(`${svc.url}/setup/api`);
    const form = page.locator('form[action="/setup/keys"]');
    await form.locator('input[name="_csrf"]').evaluate((input) => input.remove());
    await form.getByLabel('Name', { exact: true }).fill('Forged');
    const [answer] = await Promise.all([page.waitForResponse((response) => response.url().endsWith('/setup/keys')), form.getByRole('button', { name: 'Create key' }).click()]);
    await page.waitForLoadState('load');
    expect(answer.status()).toBe(403);
    expect(await page.textContent('h1')).toBe('Form refused');
    expect((await svc.service.backends.setup.listKeys(ws.id)).map((apiKey) => apiKey.name)).not.toContain('Forged');
    await context.close();
  });
});

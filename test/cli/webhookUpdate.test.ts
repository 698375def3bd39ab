import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';

/** `csr webhooks update`: the edit the Setup page makes, from the terminal. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-webhook-update-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const csr = csrTool(dataDir, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
let id: string;

beforeAll(async () => {
  await csr.json('workspaces', 'create', 'acme');
  ({ id } = await csr.json<{ id: string }>('webhooks', 'create', '--workspace', 'acme', '--name', 'CRM', '--url', 'https://127.0.0.1:9/crm', '--events', 'created'));
});

describe('csr webhooks update', () => {
  it('changes what is given and keeps the rest (never showing the secret)', async () => {
    const changed = await csr.json('webhooks', 'update', id, '--name', 'CRM v2', '--objects', 'clients,tasks');
    expect(changed).toEqual({ id, name: 'CRM v2', url: 'https://127.0.0.1:9/crm', events: ['created'], objects: ['clients', 'tasks'], enabled: true, disabledReason: null });
    expect(await csr.json('webhooks', 'update', id, '--events', 'all', '--objects', 'all')).toMatchObject({ name: 'CRM v2', events: 'all', objects: 'all' });
  });

  it('refuses what creating refuses, and an unknown webhook', async () => {
    expect(await csr.fails(1, 'webhooks', 'update', id, '--url', 'http://example.com/x')).toContain('the webhook url is refused');
    expect(await csr.fails(1, 'webhooks', 'update', id, '--objects', 'nope')).toContain('unknown object "nope"');
    expect(await csr.fails(1, 'webhooks', 'update', id, '--name', ' ')).toContain('the webhook name must not be empty');
    expect(await csr.fails(1, 'webhooks', 'update', '00000000-0000-0000-0000-000000000000', '--name', 'x')).toContain('not found');
    expect((await csr.json<{ name: string }[]>('webhooks', 'list', '--workspace', 'acme'))[0]).toMatchObject({ name: 'CRM v2', url: 'https://127.0.0.1:9/crm' });
  });
});

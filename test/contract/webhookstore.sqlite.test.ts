import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openSqliteWebhookStore } from '../../src/webhooks/sqlite/index.js';
import { webhookStoreContract } from './webhookstore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'csr-webhookstore-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

webhookStoreContract('sqlite', () => openSqliteWebhookStore({ path: join(dir, 'webhooks.db') }));

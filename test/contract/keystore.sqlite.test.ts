import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openSqliteKeyStore } from '../../src/privacy/sqlite/index.js';
import { keyStoreContract } from './keystore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'csr-keystore-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

keyStoreContract('sqlite', () => openSqliteKeyStore({ path: join(dir, 'keys.db') }));

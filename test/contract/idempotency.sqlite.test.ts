import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openSqliteIdempotencyStore } from '../../src/idempotency/sqlite/index.js';
import { idempotencyStoreContract } from './idempotency.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'csr-idempotency-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

idempotencyStoreContract('sqlite', () => openSqliteIdempotencyStore({ path: join(dir, 'idempotency.db') }));

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openSqliteRateLimitStore } from '../../src/ratelimit/sqlite/index.js';
import { rateLimitStoreContract } from './ratelimitstore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'csr-ratelimits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every instance on one file: the buckets the API processes of a machine share.
rateLimitStoreContract('sqlite', () => openSqliteRateLimitStore({ path: join(dir, 'ratelimits.db') }));

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatPosition } from '../../src/eventstore/position.js';
import type { FindQuery, ReadStore, RecordDocument } from '../../src/readstore/port.js';
import { finishBulkLoad } from '../../src/readstore/sqlite/bulkLoad.js';
import { tablesOf } from '../../src/readstore/sqlite/connection.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';
import { Sqlite } from '../../src/sqlite/driver.js';

/**
 * The embedded read store finishes a bulk-loaded generation in steps, each a short transaction
 * (bulkFinish.ts). A rebuild stopped between two steps resumes, so a promotion must end with the
 * same filter rows, counts and indexes from any state a stop can leave.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-bulk-finish-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const owner = `test:${process.pid}`;
const ws = 'ws';

function doc(n: number): RecordDocument {
  const at = new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString();
  return {
    workspaceId: ws,
    object: 'clients',
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    name: `Client ${n}`,
    fields: { tier: n % 3 ? 'SMB' : 'Enterprise', n },
    calculated: { score: n % 5 },
    createdAt: at,
    updatedAt: at,
    createdPosition: formatPosition(BigInt(n)),
    revision: 0,
  };
}

const DOCUMENTS = 2_500;
const query = (filters: FindQuery['filters'] = []): FindQuery => ({ workspaceId: ws, object: 'clients', filters, limit: 10_000, offset: 0 });

/** A store whose generation being built holds DOCUMENTS documents, loaded in bulk. */
async function loaded(name: string): Promise<{ store: ReadStore; path: string; generation: number }> {
  const path = join(dir, `${name}.db`);
  const store = openSqliteReadStore({ path });
  const { generation } = await store.beginGeneration({ version: 'v2', owner, restart: false, ownerAlive: () => false });
  const all = Array.from({ length: DOCUMENTS }, (_, i) => doc(i + 1));
  for (let at = 0; at < all.length; at += 1_000) {
    await store.transaction(async (tx) => {
      await tx.putMany(all.slice(at, at + 1_000));
      await tx.setCheckpoint('records', formatPosition(BigInt(at + 1_000)));
    }, { generation });
  }
  return { store, path, generation };
}

async function expectFinished(store: ReadStore, path: string, generation: number): Promise<void> {
  const smb = Array.from({ length: DOCUMENTS }, (_, i) => i + 1).filter((n) => n % 3 !== 0);
  expect(await store.find(query())).toMatchObject({ total: DOCUMENTS });
  const found = await store.find(query([{ field: 'tier', value: 'smb' }]));
  expect(found.total).toBe(smb.length);
  expect(found.documents.map((d) => d.id)).toEqual(smb.map((n) => doc(n).id));
  expect((await store.find(query([{ field: 'tier', value: 'smb' }, { field: 'score', value: '0' }]))).total).toBe(smb.filter((n) => n % 5 === 0).length);
  expect((await store.find(query([{ field: 'tier', value: 'stale' }]))).total).toBe(0);
  const file = new Sqlite(path, { readonly: true });
  try {
    const t = tablesOf(generation);
    const indexes = file.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name").pluck().all(t.documents);
    expect(indexes).toEqual([`documents_by_creation_g${generation}`, `documents_by_name_g${generation}`, `documents_by_update_g${generation}`]);
    // No filter row or count left over from the stopped finish.
    expect(file.prepare(`SELECT count(*) FROM ${t.filters} WHERE key = 'stale'`).pluck().get()).toBe(0);
    expect(file.prepare(`SELECT count(*) FROM ${t.filterCounts} WHERE key = 'stale'`).pluck().get()).toBe(0);
  } finally {
    file.close();
  }
}

describe('sqlite read store: finishing a bulk-loaded generation', () => {
  it('in steps, to the same rows, counts and indexes as the live path', async () => {
    const { store, path, generation } = await loaded('steps');
    await store.promoteGeneration(generation, 'records', async () => {});
    await expectFinished(store, path, generation);
    await store.close();
  });

  it('after a stop halfway through copying the filter rows (still loading): the copied rows are made again', async () => {
    const { store, path, generation } = await loaded('copying');
    const file = new Sqlite(path);
    const t = tablesOf(generation);
    file.exec(`INSERT INTO ${t.filters} (coll, field, key, created_position, doc_id) SELECT coll, 'tier', 'stale', created_position, doc_id FROM ${t.documents} LIMIT 10`);
    file.exec(`INSERT INTO ${t.filterCounts} (coll, field, key, n) SELECT coll, 'tier', 'stale', 10 FROM ${t.collections}`);
    file.close();
    await store.promoteGeneration(generation, 'records', async () => {});
    await expectFinished(store, path, generation);
    await store.close();
  });

  it('after a stop between the index steps (no longer loading): the switch creates the missing indexes', async () => {
    const { store, path, generation } = await loaded('indexing');
    const file = new Sqlite(path);
    const t = tablesOf(generation);
    file.transaction(() => finishBulkLoad(file, t))();
    file.exec(`DROP INDEX documents_by_name_g${generation}; DROP INDEX documents_by_update_g${generation};`);
    file.close();
    await store.promoteGeneration(generation, 'records', async () => {});
    await expectFinished(store, path, generation);
    await store.close();
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatPosition } from '../../src/eventstore/position.js';
import { REBUILD_SUPERSEDED, type ReadStore, type ReadTransaction, type RecordDocument } from '../../src/readstore/port.js';
import { batchThreadFits as fitsFromSources } from '../../src/readstore/sqlite/batchPipeline.js';
import { Sqlite } from '../../src/sqlite/driver.js';

/**
 * A rebuild's batches written on a thread of their own (batchPipeline.ts). The thread runs the
 * compiled script, so these tests load the build (dist/, made by test/globalSetup.ts); from the
 * sources vitest runs, every batch is an ordinary transaction, which is the reference here.
 */

type PipelineModule = typeof import('../../src/readstore/sqlite/batchPipeline.js');
type StoreModule = typeof import('../../src/readstore/sqlite/index.js');
const built = async <T>(path: string): Promise<T> => (await import(new URL(`../../dist/src/readstore/sqlite/${path}`, import.meta.url).href)) as T;

const dir = mkdtempSync(join(tmpdir(), 'csr-batch-thread-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const owner = `test:${process.pid}`;
const p = 'records';
const ws = 'ws';

function doc(n: number, revision = 0, object = n % 2 ? 'clients' : 'billing'): RecordDocument {
  const at = new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString();
  return {
    workspaceId: ws, object, id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, name: `Record ${n}`,
    fields: { tier: n % 3 ? 'SMB' : 'Enterprise', n, revision }, calculated: { score: (n + revision) % 5 },
    createdAt: at, updatedAt: at, createdPosition: formatPosition(BigInt(n)), revision,
  };
}

const BATCHES = 6;
const PER_BATCH = 400;

/**
 * What a projection does: looks each record up, then writes it. Batch b creates its own records
 * and changes records of the two batches before it (one of them may still be on the thread), so
 * the look-ups must find those; it deletes a few, and adds link edges.
 */
async function batch(tx: ReadTransaction, b: number): Promise<void> {
  for (let i = 0; i < PER_BATCH; i++) {
    const n = b * PER_BATCH + i + 1;
    expect(await tx.get(ws, doc(n).object, doc(n).id)).toBeNull();
    await tx.put(doc(n));
  }
  for (const earlier of [b - 1, b - 2].filter((e) => e >= 0)) {
    for (let i = 0; i < PER_BATCH; i += 7) {
      const n = earlier * PER_BATCH + i + 1;
      const found = await tx.get(ws, doc(n).object, doc(n).id);
      if (found === null) continue; // deleted by a batch before
      expect(found.revision).toBeGreaterThanOrEqual(0);
      await tx.put(doc(n, found.revision + 1));
    }
    for (let i = 3; i < PER_BATCH; i += 50) await tx.delete(ws, doc(earlier * PER_BATCH + i + 1).object, doc(earlier * PER_BATCH + i + 1).id);
  }
  await tx.addLinks([{ workspaceId: ws, object: 'invoiceLines', field: 'invoice', id: `line-${b}`, target: doc(b + 1).id }]);
  await tx.setCheckpoint(p, formatPosition(BigInt((b + 1) * PER_BATCH)));
}

/** The promoted generation's rows, as one text (documents, filter rows, counts, collections). */
function contents(path: string): string {
  const file = new Sqlite(path, { readonly: true });
  try {
    const live = file.prepare('SELECT live FROM read_model WHERE id = 1').pluck().get() as number;
    const s = live === 1 ? '' : `_g${live}`;
    const all = (sql: string) => JSON.stringify(file.prepare(sql).raw().all());
    return [
      all(`SELECT c.object, d.id, d.name, d.name_key, d.fields, d.calculated, d.created_position, d.revision FROM documents${s} d JOIN collections${s} c USING (coll) ORDER BY 1, 2`),
      all(`SELECT c.object, f.field, f.key, f.created_position, d.id FROM filters${s} f JOIN collections${s} c USING (coll) JOIN documents${s} d USING (doc_id) ORDER BY 1, 2, 3, 4, 5`),
      all(`SELECT c.object, f.field, f.key, f.n FROM filter_counts${s} f JOIN collections${s} c USING (coll) ORDER BY 1, 2, 3`),
      all(`SELECT object, documents FROM collections${s} ORDER BY 1`),
      all('SELECT * FROM link_edges ORDER BY id'),
      all('SELECT * FROM checkpoints'),
    ].join('\n');
  }
  finally {
    file.close();
  }
}

async function begin(store: ReadStore, restart = false): Promise<number> {
  return (await store.beginGeneration({ version: 'v2', owner, restart, ownerAlive: () => false })).generation;
}

describe('sqlite read store: a rebuild\'s batches on a thread of their own', () => {
  it('is chosen for a file with two cores or more and a compiled thread script, not otherwise', async () => {
    const pipeline = await built<PipelineModule>('batchPipeline.js');
    expect(pipeline.batchThreadFits(join(dir, 'any.db'), 2)).toBe(true);
    expect(pipeline.batchThreadFits(join(dir, 'any.db'), 1)).toBe(false);
    expect(pipeline.batchThreadFits(':memory:', 4)).toBe(false);
    expect(fitsFromSources(join(dir, 'any.db'), 4)).toBe(false);
  });

  it('builds, across a stop and a resume, the same generation as ordinary transactions, record for record', async () => {
    const { openSqliteReadStore } = await built<StoreModule>('index.js');
    const build = async (name: string, batchThread: boolean) => {
      const path = join(dir, `${name}.db`);
      let store = openSqliteReadStore({ path, batchThread });
      const generation = await begin(store);
      for (let b = 0; b < BATCHES; b++) {
        // Stopped halfway (the batches sent commit first), resumed by a store opened anew.
        if (b === BATCHES / 2) {
          await store.close();
          store = openSqliteReadStore({ path, batchThread });
          expect(await begin(store)).toBe(generation);
        }
        await store.transaction((tx) => batch(tx, b), { generation });
      }
      await store.promoteGeneration(generation, p, async () => {});
      await store.close();
      return contents(path);
    };
    const ordinary = await build('ordinary', false);
    expect(ordinary).toContain('SMB');
    expect(await build('threaded', true)).toBe(ordinary);
  });

  it('runs a batch that finds by value as an ordinary transaction, after the thread has committed the batches before', async () => {
    const { openSqliteReadStore } = await built<StoreModule>('index.js');
    const run = async (name: string, batchThread: boolean) => {
      const path = join(dir, `${name}.db`);
      const store = openSqliteReadStore({ path, batchThread });
      const generation = await begin(store);
      await store.transaction((tx) => batch(tx, 0), { generation });
      await store.transaction((tx) => batch(tx, 1), { generation });
      const found = await store.transaction(async (tx) => {
        await tx.put(doc(5_003));
        return tx.findAll(ws, 'clients', [{ field: 'tier', value: 'smb' }]);
      }, { generation });
      await store.transaction((tx) => batch(tx, 2), { generation });
      await store.promoteGeneration(generation, p, async () => {});
      await store.close();
      return { found: found.map((d) => `${d.id}@${d.revision}`), contents: contents(path) };
    };
    const ordinary = await run('find-ordinary', false);
    // Records of both batches (one of them possibly still on the thread when the batch began), and the batch's own.
    expect(ordinary.found.length).toBeGreaterThan(PER_BATCH / 2);
    expect(ordinary.found.at(-1)).toBe(`${doc(5_003).id}@0`);
    expect(await run('find-threaded', true)).toEqual(ordinary);
  });

  it('fails the next batch and the promotion once another builder restarted the rebuild; the live generation is untouched', async () => {
    const { openSqliteReadStore } = await built<StoreModule>('index.js');
    const path = join(dir, 'superseded.db');
    const store = openSqliteReadStore({ path });
    const generation = await begin(store);
    await store.transaction((tx) => batch(tx, 0), { generation });
    const other = openSqliteReadStore({ path, batchThread: false });
    const restarted = await begin(other, true);
    expect(restarted).not.toBe(generation);
    await other.close();
    const next = store.transaction((tx) => batch(tx, 1), { generation }).then(() => store.promoteGeneration(generation, p, async () => {}));
    await expect(next).rejects.toThrow(REBUILD_SUPERSEDED);
    expect((await store.generations()).live).toBe(1);
    expect(await store.checkpoint(p)).toBeNull();
    await store.close();
  });
});

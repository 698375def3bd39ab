import type Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatPosition } from '../../src/eventstore/position.js';
import type { RecordDocument } from '../../src/readstore/port.js';
import { generationSchema, openConnection, READ_MAP_BYTES, tablesOf } from '../../src/readstore/sqlite/connection.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';
import { ReadConnections, STILL_MS } from '../../src/readstore/sqlite/readConnections.js';
import { Sqlite } from '../../src/sqlite/driver.js';
import { beforeTimer } from '../support/until.js';
import { readStoreContract } from './readstore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'csr-readstore-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

readStoreContract('sqlite', () => openSqliteReadStore({ path: join(dir, 'contract.db') }));

function doc(workspaceId: string, n: number): RecordDocument {
  const at = new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString();
  return {
    workspaceId,
    object: 'clients',
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    name: `Client ${n}`,
    fields: { n },
    calculated: {},
    createdAt: at,
    updatedAt: at,
    createdPosition: formatPosition(BigInt(n)),
    revision: 0,
  };
}

describe('sqlite read store', () => {
  it('wakes an in-process waiter as the checkpoint commits, without a polling delay', async () => {
    const store = openSqliteReadStore({ path: join(dir, 'wake.db') });
    try {
      let woke: boolean | undefined;
      void store.waitForCheckpoint('records', formatPosition(3n), 5000).then((reached) => (woke = reached));
      await store.transaction((tx) => tx.setCheckpoint('records', formatPosition(3n)));
      // The waiter was settled before the transaction's own promise resolved.
      expect(woke).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('a second instance on the same file (another process) moving the checkpoint wakes the first', async () => {
    const path = join(dir, 'shared.db');
    const api = openSqliteReadStore({ path });
    const projector = openSqliteReadStore({ path });
    try {
      // Its own timeout a minute away: only the other instance's commit can wake it in time.
      const waiting = api.waitForCheckpoint('records', formatPosition(2n), 60_000);
      await projector.transaction(async (tx) => {
        await tx.put(doc('ws', 1));
        await tx.setCheckpoint('records', formatPosition(2n));
      });
      // Within 500 ms of the commit, judged by a timer (the waiter's poll, due sooner, runs first
      // however late the process runs both).
      expect(await beforeTimer(waiting, 500)).toBe(true);
      expect(await api.get('ws', 'clients', doc('ws', 1).id)).toEqual(doc('ws', 1));
      // And it still times out when the other instance never gets there.
      expect(await api.waitForCheckpoint('records', formatPosition(9n), 60)).toBe(false);
    } finally {
      await api.close();
      await projector.close();
    }
  });

  it('runs concurrent transactions one after the other on its one write connection', async () => {
    const store = openSqliteReadStore({ path: join(dir, 'serial.db') });
    try {
      const counter = { ...doc('ws', 1), fields: { count: 0 } };
      await store.transaction((tx) => tx.put(counter));
      await Promise.all(
        Array.from({ length: 20 }, () =>
          store.transaction(async (tx) => {
            const current = (await tx.get('ws', 'clients', counter.id))!;
            await new Promise((resolve) => setTimeout(resolve, 1));
            await tx.put({ ...current, fields: { count: (current.fields.count as number) + 1 } });
          }),
        ),
      );
      expect((await store.get('ws', 'clients', counter.id))!.fields.count).toBe(20);
    } finally {
      await store.close();
    }
  });

  it('keeps documents, filters and checkpoints across a reopen', async () => {
    const path = join(dir, 'reopen.db');
    const first = openSqliteReadStore({ path });
    await first.transaction(async (tx) => {
      for (let n = 1; n <= 3; n++) await tx.put(doc('ws', n));
      await tx.setCheckpoint('records', formatPosition(3n));
    });
    await first.close();
    const second = openSqliteReadStore({ path });
    try {
      expect(await second.checkpoint('records')).toBe(formatPosition(3n));
      const found = await second.find({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'n', value: '2' }], limit: 10, offset: 0 });
      expect(found).toEqual({ documents: [doc('ws', 2)], total: 1 });
      expect((await second.find({ workspaceId: 'ws', object: 'clients', filters: [], limit: 10, offset: 0 })).total).toBe(3);
    } finally {
      await second.close();
    }
  });

  it('gives a store made before stored renderings the column: its documents read as not rendered, new ones keep theirs', async () => {
    const path = join(dir, 'before-renderings.db');
    const first = openSqliteReadStore({ path });
    await first.transaction((tx) => tx.put(doc('ws', 1)));
    await first.close();
    const older = new Sqlite(path);
    older.exec('ALTER TABLE documents DROP COLUMN rendered');
    older.close();

    const [second, third] = [openSqliteReadStore({ path }), openSqliteReadStore({ path })];
    try {
      expect(await second.get('ws', 'clients', doc('ws', 1).id)).toEqual(doc('ws', 1));
      expect((await second.getStored('ws', 'clients', doc('ws', 1).id))?.rendered).toBeNull();
      await second.transaction((tx) => tx.put({ ...doc('ws', 2), rendered: 'shape\u0001{}' }));
      expect((await third.getStored('ws', 'clients', doc('ws', 2).id))?.rendered).toBe('shape\u0001{}');
    } finally {
      await second.close();
      await third.close();
    }
  });

  it('maps the file for the reads of its mapped read connection only', () => {
    const path = join(dir, 'mapped.db');
    const write = openConnection(path, { readonly: false });
    const mapped = openConnection(path, { readonly: true, mapped: true });
    const unmapped = openConnection(path, { readonly: true, mapped: false });
    try {
      expect(mapped.pragma('mmap_size', { simple: true })).toBe(READ_MAP_BYTES);
      expect(unmapped.pragma('mmap_size', { simple: true })).toBe(0);
      expect(write.pragma('mmap_size', { simple: true })).toBe(0);
    } finally {
      unmapped.close();
      mapped.close();
      write.close();
    }
  });

  describe('which read connection a read takes', () => {
    const mapSize = (db: Database.Database) => db.pragma('mmap_size', { simple: true });
    /** A clock the test moves; readers are the connections themselves. */
    const connections = (path: string) => {
      const clock = { ms: 1_000 };
      return { clock, readers: new ReadConnections(path, (db) => db, () => clock.ms) };
    };
    /** A projection transaction of another store on the file commits, and its signal is delivered. */
    const commitElsewhere = async (path: string, position: bigint) => {
      const projector = openSqliteReadStore({ path });
      try {
        await projector.transaction(async (tx) => {
          await tx.put(doc('ws', Number(position)));
          await tx.setCheckpoint('records', formatPosition(position));
        });
      } finally {
        await projector.close();
      }
      await new Promise((resolve) => setImmediate(resolve));
    };

    it.each([
      { given: 'no commit heard yet', heardMsAgo: null, takes: 'mapped' },
      { given: 'a commit heard just now', heardMsAgo: 0, takes: 'unmapped' },
      { given: `a commit heard ${STILL_MS - 1} ms ago`, heardMsAgo: STILL_MS - 1, takes: 'unmapped' },
      { given: `a commit heard ${STILL_MS} ms ago (the file still since)`, heardMsAgo: STILL_MS, takes: 'mapped' },
    ])('given $given, a read takes the $takes connection', async ({ heardMsAgo, takes }) => {
      const path = join(dir, `which-${String(heardMsAgo)}.db`);
      openSqliteReadStore({ path }).close();
      const { clock, readers } = connections(path);
      try {
        if (heardMsAgo !== null) {
          await commitElsewhere(path, 1n);
          clock.ms += heardMsAgo;
        }
        expect(mapSize(readers.current())).toBe(takes === 'mapped' ? READ_MAP_BYTES : 0);
      } finally {
        readers.close();
      }
    });

    it('both connections read what was committed last, whichever a read takes', async () => {
      const path = join(dir, 'which-reads.db');
      const api = openSqliteReadStore({ path });
      try {
        await commitElsewhere(path, 1n);
        // Heard just now: the unmapped connection answers.
        expect(await api.get('ws', 'clients', doc('ws', 1).id)).toEqual(doc('ws', 1));
        await new Promise((resolve) => setTimeout(resolve, STILL_MS + 20));
        await commitElsewhere(path, 2n);
        expect(await api.get('ws', 'clients', doc('ws', 2).id)).toEqual(doc('ws', 2));
        await new Promise((resolve) => setTimeout(resolve, STILL_MS + 20));
        // Still since: the mapped connection answers, and sees both.
        expect((await api.find({ workspaceId: 'ws', object: 'clients', filters: [], limit: 10, offset: 0 })).total).toBe(2);
        expect(await api.checkpoint('records')).toBe(formatPosition(2n));
      } finally {
        await api.close();
      }
    });
  });

  it('reads through its map what another instance wrote after the file grew, in the WAL and once copied into the file', async () => {
    const path = join(dir, 'grown.db');
    const api = openSqliteReadStore({ path });
    const projector = openSqliteReadStore({ path });
    try {
      expect(await api.get('ws', 'clients', doc('ws', 1).id)).toBeNull();
      const documents = Array.from({ length: 3_000 }, (_, n) => ({ ...doc('ws', n + 1), fields: { n: n + 1, notes: 'x'.repeat(500) } }));
      // Transactions that set no checkpoint ring no signal: every read here takes the mapped connection.
      await projector.transaction((tx) => tx.putMany(documents));
      expect(await api.get('ws', 'clients', documents[2_999]!.id)).toEqual(documents[2_999]);
      const checkpointer = new Sqlite(path);
      checkpointer.pragma('wal_checkpoint(TRUNCATE)');
      checkpointer.close();
      for (const n of [0, 1_500, 2_999]) expect(await api.get('ws', 'clients', documents[n]!.id)).toEqual(documents[n]);
      await projector.transaction((tx) => tx.put({ ...documents[0]!, fields: { n: 0 }, revision: 1 }));
      expect(await api.get('ws', 'clients', documents[0]!.id)).toEqual({ ...documents[0]!, fields: { n: 0 }, revision: 1 });
    } finally {
      await api.close();
      await projector.close();
    }
  });

  it('keeps a count for filter keys of two rows or more only, and answers the same totals', async () => {
    const path = join(dir, 'counts.db');
    const store = openSqliteReadStore({ path });
    const raw = new Sqlite(path, { readonly: true });
    const withIndustry = (n: number, industry: string) => ({ ...doc('ws', n), fields: { n, industry } });
    const counted = () => raw.prepare("SELECT key, n FROM filter_counts WHERE field = 'industry' ORDER BY key").all();
    const total = async (...values: string[]) =>
      (await store.find({ workspaceId: 'ws', object: 'clients', filters: values.map((value) => ({ field: 'industry', value })), limit: 1, offset: 0 })).total;
    try {
      await store.transaction((tx) => tx.putMany([withIndustry(1, 'Alpha'), withIndustry(2, 'Alpha'), withIndustry(3, 'Beta')]));
      expect(counted()).toEqual([{ key: 'alpha', n: 2 }]);
      expect(raw.prepare("SELECT COUNT(*) AS rows FROM filter_counts WHERE field = 'n'").get()).toEqual({ rows: 0 });
      expect([await total('Alpha'), await total('beta'), await total('Gamma')]).toEqual([2, 1, 0]);

      await store.transaction((tx) => tx.put({ ...withIndustry(2, 'Beta'), revision: 1 }));
      expect(counted()).toEqual([{ key: 'beta', n: 2 }]);
      expect([await total('Alpha'), await total('Beta')]).toEqual([1, 2]);

      await store.transaction(async (tx) => {
        await tx.delete('ws', 'clients', doc('ws', 3).id);
        await tx.put(withIndustry(4, 'Alpha'));
      });
      expect(counted()).toEqual([{ key: 'alpha', n: 2 }]);
      expect([await total('Alpha'), await total('Beta')]).toEqual([2, 1]);
      // Two filters: the one of fewer rows drives the query, counted or not.
      const both = await store.find({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'industry', value: 'Alpha' }, { field: 'n', value: '4' }], limit: 10, offset: 0 });
      expect(both.documents.map((found) => found.id)).toEqual([doc('ws', 4).id]);

      await store.transaction(async (tx) => {
        await tx.delete('ws', 'clients', doc('ws', 1).id);
        await tx.delete('ws', 'clients', doc('ws', 4).id);
      });
      expect(counted()).toEqual([]);
      expect([await total('Alpha'), await total('Beta')]).toEqual([0, 1]);
    } finally {
      raw.close();
      await store.close();
    }
  });

  it('writes a record looked up and not found once, however often the transaction puts it', async () => {
    const path = join(dir, 'absent.db');
    const store = openSqliteReadStore({ path });
    const raw = new Sqlite(path, { readonly: true });
    const withIndustry = (n: number, industry: string, revision: number) => ({ ...doc('ws', n), fields: { n, industry }, revision });
    const rows = () => raw.prepare("SELECT key FROM filters WHERE field = 'industry' ORDER BY key").all();
    const total = async (value: string) =>
      (await store.find({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'industry', value }], limit: 1, offset: 0 })).total;
    try {
      await store.transaction(async (tx) => {
        expect(await tx.get('ws', 'clients', doc('ws', 1).id)).toBeNull();
        await tx.put(withIndustry(1, 'Alpha', 0));
        await tx.put(withIndustry(1, 'Beta', 1));
        expect(await tx.get('ws', 'clients', doc('ws', 2).id)).toBeNull();
        await tx.delete('ws', 'clients', doc('ws', 2).id);
        await tx.put(withIndustry(2, 'Beta', 0));
      });
      expect(rows()).toEqual([{ key: 'beta' }, { key: 'beta' }]);
      expect([await total('Alpha'), await total('Beta')]).toEqual([0, 2]);
      expect((await store.get('ws', 'clients', doc('ws', 1).id))?.revision).toBe(1);
      // A later transaction looks up again: what an earlier one found absent is not remembered.
      await store.transaction((tx) => tx.put(withIndustry(2, 'Alpha', 1)));
      expect(rows()).toEqual([{ key: 'alpha' }, { key: 'beta' }]);
    } finally {
      raw.close();
      await store.close();
    }
  });

  it('counts on from a count of one kept by a store written before keys of one row went uncounted', async () => {
    const path = join(dir, 'counts-before.db');
    const store = openSqliteReadStore({ path });
    const withIndustry = (n: number) => ({ ...doc('ws', n), fields: { n, industry: 'Alpha' } });
    try {
      await store.transaction((tx) => tx.put(withIndustry(1)));
      const writer = new Sqlite(path);
      writer.prepare("INSERT INTO filter_counts (coll, field, key, n) SELECT coll, 'industry', 'alpha', 1 FROM collections").run();
      const counted = () => writer.prepare("SELECT n FROM filter_counts WHERE field = 'industry'").all();
      const total = async () => (await store.find({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'industry', value: 'Alpha' }], limit: 1, offset: 0 })).total;
      try {
        await store.transaction((tx) => tx.put(withIndustry(2)));
        expect(counted()).toEqual([{ n: 2 }]);
        expect(await total()).toBe(2);
        await store.transaction((tx) => tx.delete('ws', 'clients', doc('ws', 2).id));
        expect(counted()).toEqual([]);
        expect(await total()).toBe(1);
      } finally {
        writer.close();
      }
    } finally {
      await store.close();
    }
  });

  describe('creation positions', () => {
    const list = async (store: ReturnType<typeof openSqliteReadStore>, filters: { field: string; value: string }[] = []) =>
      (await store.find({ workspaceId: 'ws', object: 'clients', filters, limit: 10, offset: 0 })).documents;
    const stored = (path: string, table: string) => {
      const file = new Sqlite(path);
      try {
        return file.prepare(`SELECT DISTINCT typeof(created_position) AS type FROM ${table}`).all().map((row) => (row as { type: string }).type);
      } finally {
        file.close();
      }
    };
    // Positions 3, 10 and 100: as text of other widths, or as numbers compared as text, these would not sort as the log.
    const docs = [doc('ws', 100), doc('ws', 3), { ...doc('ws', 10), fields: { n: 3 } }];

    it('are kept as integers in a new store and read back as the log wrote them, in its order', async () => {
      const path = join(dir, 'positions-integer.db');
      const store = openSqliteReadStore({ path });
      try {
        await store.transaction((tx) => tx.putMany(docs));
        expect(stored(path, 'documents')).toEqual(['integer']);
        expect(stored(path, 'filters')).toEqual(['integer']);
        expect(await list(store)).toEqual([doc('ws', 3), docs[2], doc('ws', 100)]);
        expect((await list(store, [{ field: 'n', value: '3' }])).map((d) => d.createdPosition)).toEqual([formatPosition(3n), formatPosition(10n)]);
        expect(await store.get('ws', 'clients', doc('ws', 100).id)).toEqual(doc('ws', 100));
      } finally {
        await store.close();
      }
    });

    it('of a generation made with text positions stay text; its rebuild makes the next generation with integers, listing the same', async () => {
      const path = join(dir, 'positions-text.db');
      const older = new Sqlite(path);
      older.exec(generationSchema(tablesOf(1)).replaceAll('created_position INTEGER', 'created_position TEXT'));
      older.close();
      const store = openSqliteReadStore({ path });
      try {
        await store.transaction((tx) => tx.putMany(docs));
        await store.transaction((tx) => tx.put({ ...doc('ws', 3), fields: { n: 3 }, revision: 1 }));
        expect(stored(path, 'documents')).toEqual(['text']);
        expect(stored(path, 'filters')).toEqual(['text']);
        const before = await list(store, [{ field: 'n', value: '3' }]);
        expect(before.map((d) => d.createdPosition)).toEqual([formatPosition(3n), formatPosition(10n)]);

        const building = await store.beginGeneration({ version: 'v2', owner: 'test:1', restart: false, ownerAlive: () => false });
        const all = await list(store);
        await store.transaction((tx) => tx.putMany(all), { generation: building.generation });
        await store.promoteGeneration(building.generation, 'records', async () => {});
        expect(stored(path, `documents_g${building.generation}`)).toEqual(['integer']);
        expect(stored(path, `filters_g${building.generation}`)).toEqual(['integer']);
        expect(await list(store)).toEqual(all);
        expect(await list(store, [{ field: 'n', value: '3' }])).toEqual(before);
      } finally {
        await store.close();
      }
    });

    it('that the embedded log never writes are refused by an integer generation, with nothing of the batch written', async () => {
      const store = openSqliteReadStore({ path: join(dir, 'positions-foreign.db') });
      try {
        await expect(store.transaction((tx) => tx.putMany([doc('ws', 1), { ...doc('ws', 2), createdPosition: '2' }]))).rejects.toThrow(RangeError);
        expect(await store.get('ws', 'clients', doc('ws', 1).id)).toBeNull();
      } finally {
        await store.close();
      }
    });
  });

  it('refuses work after close and resolves pending waiters false', async () => {
    const store = openSqliteReadStore({ path: join(dir, 'closed.db') });
    const waiting = store.waitForCheckpoint('records', formatPosition(1n), 5000);
    await store.close();
    expect(await waiting).toBe(false);
    await expect(store.transaction(async () => undefined)).rejects.toThrow('closed');
  });

  it('rejects an updatedSince that is not a date-time with ValidationFailed', async () => {
    const store = openSqliteReadStore({ path: join(dir, 'invalid.db') });
    try {
      await store.transaction((tx) => tx.put(doc('ws', 1)));
      await expect(
        store.find({ workspaceId: 'ws', object: 'clients', filters: [], updatedSince: 'yesterday', limit: 10, offset: 0 }),
      ).rejects.toMatchObject({ status: 422 });
    } finally {
      await store.close();
    }
  });
});

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InsufficientStorage } from '../../src/core/errors.js';
import { formatPosition } from '../../src/eventstore/position.js';
import { openPool, type Pool } from '../../src/postgres/pool.js';
import { statisticsRows } from '../../src/readstore/postgres/analyze.js';
import { documentWrites } from '../../src/readstore/postgres/documentWrites.js';
import { findPlan } from '../../src/readstore/postgres/findPlan.js';
import { openPostgresReadStore } from '../../src/readstore/postgres/index.js';
import { NameFinds } from '../../src/readstore/postgres/nameFinds.js';
import { PointReads } from '../../src/readstore/postgres/pointReads.js';
import { DOCUMENT_COLUMNS } from '../../src/readstore/postgres/rows.js';
import { migrate } from '../../src/postgres/migrate.js';
import { LIVE, READ_MIGRATION } from '../../src/readstore/postgres/schema.js';
import type { FindQuery, ReadStore, RecordDocument } from '../../src/readstore/port.js';
import { beforeTimer, eventually } from '../support/until.js';
import { describeBackend } from './backends.js';
import { postgresBackend, postgresDatabases } from './postgres.js';
import { onOwnPool } from './postgresStores.js';
import { expectGenericPlan, flatten, recordStatements, type PlanNode } from './postgresStatements.js';
import { readStoreContract } from './readstore.contract.js';

/**
 * The ReadStore contract against a real PostgreSQL (DATABASE_URL or the local server; skipped with
 * one line otherwise, see ./postgres.ts), plus what is particular to PostgreSQL: checkpoints moved
 * by another process, the never-backwards and fencing rules, the query plans behind the indexes,
 * and a full disk. Every store works in a database of its own, on a pool of its own as a process has.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL read store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  readStoreContract('postgres', async () => onOwnPool(await database(), openPostgresReadStore));

  function doc(workspaceId: string, n: number, overrides: Partial<RecordDocument> = {}): RecordDocument {
    const at = new Date(Date.UTC(2025, 0, 1, 0, 0, 0, n)).toISOString();
    return {
      workspaceId,
      object: 'clients',
      id: randomUUID(),
      name: `Client ${n}`,
      fields: { n, tier: n % 2 === 0 ? 'SMB' : 'Enterprise', tags: [`t${n % 7}`, `u${n % 5}`] },
      calculated: {},
      createdAt: at,
      updatedAt: at,
      createdPosition: formatPosition(BigInt(n)),
      revision: 0,
      ...overrides,
    };
  }

  /** A store on a pool of its own in a fresh database, the pool also for looking at the server; both closed after `work`. */
  async function withStore(work: (store: ReadStore, pool: Pool) => Promise<void>): Promise<void> {
    const pool = openPool({ url: await database(), max: 4 });
    const store = await openPostgresReadStore({ pool });
    try {
      await work(store, pool);
    } finally {
      await store.close();
      await pool.end();
    }
  }

  describe('PostgreSQL specifics', () => {
    it("reads the rows the server's statistics give a generation, none before its first analysis (the analyzer's first mark)", async () => {
      await withStore(async (store, pool) => {
        expect(await statisticsRows(pool, 1)).toBe(0);
        expect(await statisticsRows(pool, 99)).toBe(0);
        const workspaceId = `ws-${randomUUID()}`;
        await store.transaction(async (tx) => tx.putMany!(Array.from({ length: 300 }, (_, n) => doc(workspaceId, n + 1))));
        await pool.query('ANALYZE csr_records_g1');
        expect(await statisticsRows(pool, 1)).toBe(300);
      });
    });

    it('a checkpoint committed by another process wakes a waiter within moments (LISTEN/NOTIFY), and its documents are then read', async () => {
      const url = await database();
      // The safety-net poll a minute away, as the waiter's own timeout: only the notification of
      // the other process's commit can wake it.
      const api = await onOwnPool(url, ({ pool }) => openPostgresReadStore({ pool, checkpointPollMs: 60_000 }));
      const projector = await onOwnPool(url, openPostgresReadStore);
      try {
        const waiting = api.waitForCheckpoint('records', formatPosition(2n), 60_000);
        await new Promise((resolve) => setTimeout(resolve, 50));
        const written = doc('ws', 1);
        await projector.transaction(async (tx) => {
          await tx.put(written);
          await tx.setCheckpoint('records', formatPosition(2n));
        });
        expect(await beforeTimer(waiting, 500)).toBe(true);
        expect(await api.get('ws', 'clients', written.id)).toEqual(written);
        expect(await api.waitForCheckpoint('records', formatPosition(9n), 60)).toBe(false);
      } finally {
        await api.close();
        await projector.close();
      }
    });

    it('once a checkpoint has been read while listening, later waits for it are answered by the notifications alone (no query per write)', async () => {
      const url = await database();
      const pool = openPool({ url, max: 4 });
      const api = await openPostgresReadStore({ pool });
      const projector = await onOwnPool(url, openPostgresReadStore);
      try {
        await projector.transaction((tx) => tx.setCheckpoint('records', formatPosition(1n)));
        expect(await api.waitForCheckpoint('records', formatPosition(1n), 5_000)).toBe(true);
        const statements = recordStatements(pool);
        for (let n = 2n; n <= 4n; n++) {
          const waiting = api.waitForCheckpoint('records', formatPosition(n), 5_000);
          await projector.transaction((tx) => tx.setCheckpoint('records', formatPosition(n)));
          expect(await beforeTimer(waiting, 900)).toBe(true);
        }
        expect(await api.waitForCheckpoint('records', formatPosition(3n), 0)).toBe(true);
        expect(statements.filter((text) => text.includes('FROM csr_checkpoints'))).toEqual([]);
      } finally {
        await api.close();
        await projector.close();
        await pool.end();
      }
    });

    it('a waiter whose listening connection is cut (a server restart, a proxy) is still woken by the commit', async () => {
      const url = await database();
      const api = await onOwnPool(url, openPostgresReadStore);
      const projector = await onOwnPool(url, openPostgresReadStore);
      const admin = openPool({ url, max: 1 });
      try {
        const waiting = api.waitForCheckpoint('records', formatPosition(3n), 60_000);
        await new Promise((resolve) => setTimeout(resolve, 50));
        // Only this test's database: the server is shared with other suites and their listeners.
        const cut = await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN csr_checkpoints%' AND pid <> pg_backend_pid()",
        );
        expect(cut.rowCount).toBeGreaterThanOrEqual(1);
        await projector.transaction((tx) => tx.setCheckpoint('records', formatPosition(3n)));
        expect(await beforeTimer(waiting, 5_000)).toBe(true);
      } finally {
        await api.close();
        await projector.close();
        await admin.end();
      }
    });

    it('a checkpoint never moves backwards, also when a late batch of a lost projector commits', async () => {
      const store = await onOwnPool(await database(), openPostgresReadStore);
      try {
        await store.transaction((tx) => tx.setCheckpoint('records', formatPosition(10n)));
        await store.transaction((tx) => tx.setCheckpoint('records', formatPosition(4n)));
        expect(await store.checkpoint('records')).toBe(formatPosition(10n));
      } finally {
        await store.close();
      }
    });

    it('with a fence, a batch whose writer lost its lease is rolled back whole, checkpoint and documents', async () => {
      const url = await database();
      const pool = openPool({ url, max: 2 });
      try {
        await pool.query('CREATE TABLE lease (holder text, token integer)');
        await pool.query("INSERT INTO lease VALUES ('a', 1)");
        // The fence is an expression the checkpoint's statement evaluates: it raises once the lease is another's.
        await pool.query(`CREATE FUNCTION fence() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN
          PERFORM 1 FROM lease WHERE holder = 'a' AND token = 1 FOR SHARE;
          IF NOT FOUND THEN RAISE EXCEPTION 'the projector lease was taken over'; END IF;
          RETURN true; END $$`);
        const fence = () => 'fence()';
        const store = await openPostgresReadStore({ pool, fence });
        const kept = doc('ws', 1);
        await store.transaction(async (tx) => {
          await tx.put(kept);
          await tx.setCheckpoint('records', formatPosition(1n));
        });
        await pool.query("UPDATE lease SET holder = 'b', token = 2");
        const late = doc('ws', 2);
        await expect(
          store.transaction(async (tx) => {
            await tx.put(late);
            await tx.setCheckpoint('records', formatPosition(2n));
          }),
        ).rejects.toThrow(/taken over/);
        expect(await store.get('ws', 'clients', late.id)).toBeNull();
        expect(await store.checkpoint('records')).toBe(formatPosition(1n));
        await store.close();
        // close() leaves the shared pool to its owner.
        expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      } finally {
        await pool.end();
      }
    });

    it('a full disk (SQLSTATE 53100) is InsufficientStorage (507), and nothing of the batch is kept', async () => {
      const url = await database();
      const store = await onOwnPool(url, openPostgresReadStore);
      const admin = openPool({ url, max: 1 });
      try {
        // The server's own error with the disk-full code, raised where a full disk would stop the write.
        await admin.query(`CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.name = 'Full' THEN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END IF; RETURN NEW; END $$`);
        await admin.query('CREATE TRIGGER full_disk BEFORE INSERT OR UPDATE ON csr_records_g1 FOR EACH ROW EXECUTE FUNCTION full_disk()');
        const first = doc('ws', 1);
        const error = await store
          .transaction(async (tx) => {
            await tx.put(first);
            await tx.put(doc('ws', 2, { name: 'Full' }));
            await tx.setCheckpoint('records', formatPosition(2n));
          })
          .catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(InsufficientStorage);
        expect(await store.get('ws', 'clients', first.id)).toBeNull();
        expect(await store.checkpoint('records')).toBeNull();
      } finally {
        await store.close();
        await admin.end();
      }
    });

    it('lists, filters, name matches, updated_since and their totals are read from indexes that start with the workspace, in order (no Seq Scan, no Sort)', async () => {
      const url = await database();
      const store = await onOwnPool(url, openPostgresReadStore);
      const pool = openPool({ url, max: 1 });
      try {
        for (const ws of ['ws', 'other-a', 'other-b']) {
          await store.transaction((tx) => tx.putMany(Array.from({ length: 1_000 }, (_, i) => doc(ws, i + 1))));
        }
        await pool.query('ANALYZE');
        const client = await pool.connect();
        try {
          // On a table this small a scan of everything would be as cheap; the planner is told to
          // prefer any other plan, so that a missing or unusable index shows as a Seq Scan. Sorting
          // stays allowed: a Sort in the plan means no index gives the order.
          await client.query('SET enable_seqscan = off');
          const base: FindQuery = { workspaceId: 'ws', object: 'clients', filters: [], limit: 10, offset: 20 };
          const KEYS = '(workspace_id, object, key, created_position, id, generation)';
          const BY_CREATION = '(workspace_id, object, created_position, id)';
          const BY_NAME = '(workspace_id, object, name_key, created_position, id)';
          const BY_UPDATED = '(workspace_id, object, updated_ms)';
          // [what, query, indexes of which one must be used, whether the index must give the order].
          // With two conditions the server may drive from the more selective one and sort its few
          // matches (fewer rows than the other's in order): an index still finds every row.
          const cases: Array<[string, Partial<FindQuery>, string[], boolean]> = [
            ['list', {}, [BY_CREATION], true],
            ['filter', { filters: [{ field: 'tier', value: 'smb' }] }, [KEYS], true],
            ['name', { name: 'client 7' }, [BY_NAME], true],
            ['two filters', { filters: [{ field: 'tier', value: 'smb' }, { field: 'tags', value: 't3' }] }, [KEYS], false],
            ['filter and name', { filters: [{ field: 'tier', value: 'smb' }], name: 'client 8' }, [KEYS, BY_NAME], false],
            // A range gives no order: its matches (recent changes, by the parameter's purpose) are sorted.
            ['updated since', { updatedSince: '2025-01-01T00:00:00.900Z' }, [BY_UPDATED, BY_CREATION], false],
          ];
          const indexes = new Map(
            (await client.query<{ name: string; def: string }>("SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename LIKE 'csr_record%_g1'")).rows.map(
              (row) => [row.name, row.def],
            ),
          );
          for (const [what, overrides, expected, ordered] of cases) {
            const plan = findPlan({ ...base, ...overrides }, { sql: LIVE }, DOCUMENT_COLUMNS, base);
            const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${plan.sql}`, plan.params);
            const nodes = flatten(explained.rows[0]!['QUERY PLAN'][0].Plan);
            const types = nodes.map((node) => node['Node Type']);
            expect(types, what).not.toContain('Seq Scan');
            if (ordered) expect(types, what).not.toContain('Sort');
            // The indexes of the generation's tables (the pointer's own key aside).
            const used = nodes.flatMap((node) => (node['Index Name'] && indexes.has(node['Index Name']) ? [indexes.get(node['Index Name'])!] : []));
            expect(used.some((def) => expected.some((columns) => def.endsWith(columns))), `${what}: ${used.join(' | ')}`).toBe(true);
            for (const def of used) expect(def, what).toMatch(/\(workspace_id, /);
          }
          // And the answers are right.
          const page = await store.find({ ...base, filters: [{ field: 'tier', value: 'smb' }, { field: 'tags', value: 't3' }] });
          const all = Array.from({ length: 1_000 }, (_, i) => i + 1).filter((n) => n % 2 === 0 && n % 7 === 3);
          expect(page.total).toBe(all.length);
          expect(page.documents.map((document) => document.fields.n)).toEqual(all.slice(20, 30));
        } finally {
          client.release();
        }
      } finally {
        await store.close();
        await pool.end();
      }
    });

    it("a batch's write finds each record's old filter keys by the record (its index), never by reading every key of the generation", async () => {
      await withStore(async (store, pool) => {
        const written = Array.from({ length: 4_000 }, (_, i) => doc('ws', i + 1));
        for (let at = 0; at < written.length; at += 1_000) await store.transaction((tx) => tx.putMany(written.slice(at, at + 1_000)));
        await pool.query('ANALYZE');
        const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM csr_record_keys_g1');
        expect(rows[0]!.n).toBeGreaterThan(15_000);
        // A projector's batch: three records changed, two created.
        const changed = written.slice(100, 103).map((document) => ({ ...document, fields: { ...document.fields, tier: 'Mid' }, revision: 1 }));
        const batch = [...changed, doc('ws', 5_001), doc('ws', 5_002)];
        const [statement] = documentWrites(1, batch).statements;
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>({ ...statement!, text: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement!.text}` });
          await client.query('ROLLBACK');
          const keyScans = flatten(explained.rows[0]!['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === 'csr_record_keys_g1' && node['Node Type'] !== 'ModifyTable');
          expect(keyScans.map((node) => node['Node Type'])).not.toContain('Seq Scan');
          // The changed records' keys (a few each), not the generation's.
          const read = keyScans.reduce((sum, node) => sum + node['Actual Rows'] * node['Actual Loops'], 0);
          expect(read).toBeGreaterThan(0);
          expect(read).toBeLessThanOrEqual(50);
        } finally {
          client.release();
        }
      });
    });

    it("the writers' vacuums of a generation start no parallel workers (two processes forked for a vacuum that finds little to do)", async () => {
      await withStore(async (store, pool) => {
        const statements = recordStatements(pool);
        await store.transaction((tx) => tx.putMany(Array.from({ length: 600 }, (_, i) => doc('ws', i + 1))));
        const vacuum = await eventually(
          async () => statements.find((statement) => statement.startsWith('VACUUM')),
          (found) => found !== undefined,
          5_000,
          'a vacuum after the first 500 rows',
        );
        const client = await pool.connect();
        try {
          const notices: string[] = [];
          client.on('notice', (notice) => notices.push(notice.message ?? ''));
          // Any index is big enough for a parallel worker here, so the server's choice shows in a small store.
          await client.query('SET min_parallel_index_scan_size = 0');
          const verbose = (statement: string) => statement.replace(/^VACUUM (\((.*?)\) )?/, (_, __, options?: string) => `VACUUM (VERBOSE${options ? `, ${options}` : ''}) `);
          await client.query(verbose(vacuum!));
          expect(notices.filter((notice) => /parallel vacuum workers? for index/.test(notice))).toEqual([]);
          // Where the statement does not say so, the server does start them.
          await client.query(verbose(vacuum!.replace(/^VACUUM (\(.*?\) )?/, 'VACUUM ')));
          expect(notices.filter((notice) => /launched \d+ parallel vacuum workers? for index/.test(notice)).length).toBeGreaterThan(0);
        } finally {
          client.release();
        }
      });
    });

    it('a first page of a list, with a filter or without, is planned once per connection and then runs on its generic plan', async () => {
      const url = await database();
      // One connection: the store's lists and the look at its named statements share it.
      const pool = openPool({ url, max: 1 });
      const store = await openPostgresReadStore({ pool });
      try {
        // Enough records that a tenth of them (what a bound LIMIT is costed for) is more than a page.
        for (let batch = 0; batch < 10; batch++) await store.transaction((tx) => tx.putMany(Array.from({ length: 1_000 }, (_, i) => doc('ws', batch * 1_000 + i + 1))));
        for (let i = 0; i < 12; i++) {
          await store.find({ workspaceId: 'ws', object: 'clients', filters: [], limit: 100, offset: 0 });
          await store.find({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'tier', value: i % 2 === 0 ? 'smb' : 'enterprise' }], limit: 100, offset: 0 });
        }
        const { rows } = await pool.query<{ generic: string; custom: string; filtered: boolean }>(
          "SELECT generic_plans AS generic, custom_plans AS custom, statement LIKE '%csr_record_keys k0%' AS filtered FROM pg_prepared_statements WHERE statement LIKE 'SELECT t.total, p.*%'",
        );
        expect(rows.map((row) => row.filtered).sort()).toEqual([false, true]);
        for (const row of rows) expect({ filtered: row.filtered, generic: Number(row.generic) > 0, custom: Number(row.custom) <= 5 }).toEqual({ filtered: row.filtered, generic: true, custom: true });
      } finally {
        await store.close();
        await pool.end();
      }
    });

    /** 1,200 records written by the store's own writers in three batches, with autovacuum off for the live generation's tables: whatever plans well here, the store did. */
    async function filledWithoutAutovacuum(url: string) {
      const store = await onOwnPool(url, openPostgresReadStore);
      const pool = openPool({ url, max: 1 });
      // Not autovacuum's doing: it may be off on a server (it is on some), and here it is for these tables.
      await pool.query('ALTER TABLE csr_records_g1 SET (autovacuum_enabled = false); ALTER TABLE csr_record_keys_g1 SET (autovacuum_enabled = false)');
      for (let batch = 0; batch < 3; batch++) {
        await store.transaction((tx) => tx.putMany(Array.from({ length: 400 }, (_, i) => doc('ws', batch * 400 + i + 1))));
      }
      return { store, pool };
    }

    it('a generation its writers fill gets planner statistics without autovacuum, so a filtered page finds each record by its key', async () => {
      const { store, pool } = await filledWithoutAutovacuum(await database());
      try {
        const analyzed = () =>
          pool.query<{ relname: string }>("SELECT relname FROM pg_stat_user_tables WHERE relname IN ('csr_records_g1', 'csr_record_keys_g1') AND last_analyze IS NOT NULL");
        await eventually(analyzed, (found) => found.rowCount === 2, 5_000, 'both partitions analyzed');
        const plan = findPlan({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'tier', value: 'smb' }] }, { sql: LIVE }, DOCUMENT_COLUMNS, { limit: 100, offset: 0 });
        const explained = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${plan.sql}`, plan.params);
        const records = flatten(explained.rows[0]!['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === 'csr_records_g1');
        expect(records.map((node) => node['Index Cond'] ?? '').join(' | ')).toMatch(/\(id = /);
      } finally {
        await store.close();
        await pool.end();
      }
    });

    it("a filtered list's count and page are read from the filter keys' index alone once its writers have filled a generation (no visit of the keys' table)", async () => {
      const { store, pool } = await filledWithoutAutovacuum(await database());
      try {
        const plan = findPlan({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'tier', value: 'smb' }] }, { sql: LIVE }, DOCUMENT_COLUMNS, { limit: 100, offset: 0 });
        // The last batch too (written after the last analysis): settled within a few seconds of its commit.
        const keyScans = async () => {
          const explained = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${plan.sql}`, plan.params);
          const keys = flatten(explained.rows[0]!['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === 'csr_record_keys_g1');
          return keys.map((node) => [node['Node Type'], node['Heap Fetches']]);
        };
        const scans = await eventually(keyScans, (found) => found.length > 0 && found.every(([type, fetches]) => type === 'Index Only Scan' && fetches === 0), 5_000, 'keys read from their index alone');
        expect(scans.length).toBeGreaterThan(0);
      } finally {
        await store.close();
        await pool.end();
      }
    });

    it('GETs asked while others are being read go together in one statement, each answered with its own record (missing, twice, another workspace, with and without a shape)', async () => {
      await withStore(async (store, pool) => {
        const docs = Array.from({ length: 40 }, (_, i) => doc(i % 4 === 0 ? 'other' : 'ws', i + 1));
        await store.transaction((tx) => tx.putMany(docs));
        const asked = [
          ...docs.map((d) => [d.workspaceId, d.id, undefined] as const),
          ...docs.slice(0, 10).map((d) => [d.workspaceId, d.id, 'shape\u0001'] as const),
          ['ws', docs[0]!.id, undefined] as const, // another workspace's record: not found here
          ['ws', 'no-such-id', undefined] as const,
          [docs[1]!.workspaceId, docs[1]!.id, undefined] as const, // the same record twice
        ];
        const alone = [];
        for (const [ws, id, shape] of asked) alone.push(await store.getStored(ws, 'clients', id, shape));
        const sent = recordStatements(pool);
        const together = await Promise.all(asked.map(([ws, id, shape]) => store.getStored(ws, 'clients', id, shape)));
        const summary = (record: Awaited<ReturnType<typeof store.getStored>>) => record && { id: record.id, revision: record.revision, rendered: record.rendered, document: record.document?.() ?? null };
        expect(together.map(summary)).toEqual(alone.map(summary));
        expect(together.filter((record) => record === null)).toHaveLength(2);
        expect(together[0]!.document!().fields['n']).toBe(1);
        // The first reads go at once (two at a time), the rest wait for them and go together.
        expect(sent.length).toBeGreaterThan(0);
        expect(sent.length).toBeLessThanOrEqual(4);
      });
    });

    it("finds by a name alone (an upsert's match) asked while others are on their way go together, each with its own total and first records in creation order", async () => {
      await withStore(async (store, pool) => {
        // Names 'Client 0'..'Client 9', each three times (one in another workspace), and one alone.
        const docs = Array.from({ length: 30 }, (_, i) => doc(i % 3 === 2 ? 'other' : 'ws', i + 1, { name: `Client ${i % 10}` }));
        await store.transaction((tx) => tx.putMany([...docs, doc('ws', 99, { name: 'Alone' })]));
        const statements = recordStatements(pool);
        const names = [...Array.from({ length: 10 }, (_, i) => `client ${i}`), 'ALONE', 'nobody'];
        const found = await Promise.all(names.flatMap((name) => [1, 2].map((limit) => store.find({ workspaceId: 'ws', object: 'clients', filters: [], name, limit, offset: 0 }))));
        expect(statements.length).toBeLessThanOrEqual(3);
        names.forEach((name, index) => {
          const matching = [...docs, doc('ws', 99, { name: 'Alone' })].filter((d) => d.workspaceId === 'ws' && d.name!.toLowerCase() === name.toLowerCase());
          for (const [at, limit] of [[0, 1], [1, 2]] as const) {
            const answer = found[index * 2 + at]!;
            expect(answer.total, `${name} limit ${limit}`).toBe(name === 'ALONE' ? 1 : name === 'nobody' ? 0 : matching.length);
            expect(answer.documents.map((d) => d.fields['n']), `${name} limit ${limit}`).toEqual(
              name === 'ALONE' ? [99] : matching.slice(0, limit).map((d) => d.fields['n']),
            );
          }
        });
        // A name with an offset, or with a filter, is not this statement's and still answers.
        expect((await store.find({ workspaceId: 'ws', object: 'clients', filters: [], name: 'client 1', limit: 1, offset: 1 })).documents).toHaveLength(1);
        const client = await pool.connect();
        try {
          const nodes = await expectGenericPlan(client, 'finds', new NameFinds(pool).sql, (n) => Array.from({ length: n }, (_, i) => ({ n: i, w: 'ws', o: 'clients', k: `"client ${i}"`, l: 2 })));
          const records = nodes.filter((node) => node['Relation Name'] === 'csr_records_g1');
          expect(records.length).toBe(2);
          for (const node of records) expect(node['Node Type']).toMatch(/^Index/);
        } finally {
          client.release();
        }
      });
    });

    it('the batched GET statement is planned once per connection (a generic plan), as one probe of the primary key per read', async () => {
      const url = await database();
      const store = await onOwnPool(url, openPostgresReadStore);
      const pool = openPool({ url, max: 1 });
      try {
        await store.transaction((tx) => tx.putMany(Array.from({ length: 500 }, (_, i) => doc('ws', i + 1))));
        await pool.query('ANALYZE');
        const sql = new PointReads(pool, (shape) => `r.id, CASE WHEN starts_with(r.rendered, ${shape}) THEN NULL ELSE r.fields END AS fields`).sql;
        const client = await pool.connect();
        try {
          const nodes = await expectGenericPlan(client, 'reads', sql, (n) => Array.from({ length: n }, (_, i) => ({ n: i, w: 'ws', o: 'clients', i: `id-${i}`, s: null })));
          // (The pointer's one row may be read by a scan: it is one row.)
          const records = nodes.filter((node) => node['Relation Name'] === 'csr_records_g1');
          expect(records.map((node) => [node['Node Type'], node['Index Name']])).toEqual([['Index Scan', 'csr_records_g1_pkey']]);
        } finally {
          client.release();
        }
      } finally {
        await store.close();
        await pool.end();
      }
    });

    /** Every kept count beside the count of the rows it stands for (csr_record_counts, ./schema.ts), zero counts left out. */
    async function keptAndCounted(pool: ReturnType<typeof openPool>) {
      const kept = await pool.query<{ row: string }>(
        "SELECT concat_ws('|', generation, workspace_id, object, key, n) AS row FROM csr_record_counts WHERE n <> 0 ORDER BY 1",
      );
      const counted = await pool.query<{ row: string }>(
        `SELECT concat_ws('|', generation, workspace_id, object, key, n) AS row FROM (
           SELECT generation, workspace_id, object, key, count(*) AS n FROM csr_record_keys GROUP BY 1, 2, 3, 4
           UNION ALL SELECT generation, workspace_id, object, '', count(*) FROM csr_records GROUP BY 1, 2, 3) c ORDER BY 1`,
      );
      return { kept: kept.rows.map((row) => row.row).sort(), counted: counted.rows.map((row) => row.row).sort() };
    }

    it("a list's total on one filter or none is the kept count, which stays the rows' count through changed keys, deletes, a rebuilt generation and a reset", async () => {
      await withStore(async (store, pool) => {
        const docs = Array.from({ length: 60 }, (_, i) => doc(i % 3 === 0 ? 'other' : 'ws', i + 1));
        await store.transaction((tx) => tx.putMany(docs));
        // Keys that change (a tier flipped, a tag dropped), a record written twice in one batch, deletes.
        await store.transaction(async (tx) => {
          for (const d of docs.slice(0, 20)) await tx.put({ ...d, fields: { ...d.fields, tier: d.fields['tier'] === 'SMB' ? 'Enterprise' : 'SMB', tags: ['t1'] }, revision: 1 });
          await tx.putMany([{ ...docs[30]!, fields: { n: 31, tier: 'SMB', tags: [] } }, { ...docs[30]!, fields: { n: 31, tier: 'Mid', tags: ['t1', 't1'] } }]);
          for (const d of docs.slice(40, 50)) await tx.delete(d.workspaceId, d.object, d.id);
        });
        const building = await store.beginGeneration({ version: 'v2', owner: 'test:1', restart: false, ownerAlive: () => false });
        await store.transaction((tx) => tx.putMany(docs.slice(0, 25)), { generation: building.generation });
        const { kept, counted } = await keptAndCounted(pool);
        expect(kept.length).toBeGreaterThan(10);
        expect(kept).toEqual(counted);

        // The totals a list answers, against the documents themselves.
        const live = (await pool.query<{ fields: Record<string, unknown>; workspace_id: string }>('SELECT fields, workspace_id FROM csr_records WHERE generation = 1')).rows;
        const matching = (ws: string, test: (fields: Record<string, unknown>) => boolean) => live.filter((row) => row.workspace_id === ws && test(row.fields)).length;
        const total = async (filters: FindQuery['filters'], ws = 'ws') => (await store.find({ workspaceId: ws, object: 'clients', filters, limit: 5, offset: 0 })).total;
        expect(await total([])).toBe(matching('ws', () => true));
        expect(await total([], 'other')).toBe(matching('other', () => true));
        expect(await total([{ field: 'tier', value: 'smb' }])).toBe(matching('ws', (fields) => fields['tier'] === 'SMB'));
        expect(await total([{ field: 'tags', value: 't1' }])).toBe(matching('ws', (fields) => (fields['tags'] as string[]).includes('t1')));
        expect(await total([{ field: 'tier', value: 'mid' }], 'ws')).toBe(matching('ws', (fields) => fields['tier'] === 'Mid'));
        expect(await total([{ field: 'tier', value: 'none such' }])).toBe(0);
        // Two filters are counted from the rows, and agree.
        expect(await total([{ field: 'tier', value: 'smb' }, { field: 'tags', value: 't1' }])).toBe(
          matching('ws', (fields) => fields['tier'] === 'SMB' && (fields['tags'] as string[]).includes('t1')),
        );
        expect(await total([{ field: 'tier', value: 'smb' }])).toBeGreaterThan(0);

        await store.promoteGeneration(building.generation, 'records', async () => {});
        expect(await total([])).toBe(docs.slice(0, 25).filter((d) => d.workspaceId === 'ws').length);
        await store.dropUnusedGenerations();
        await store.reset('records');
        expect(await total([])).toBe(0);
        expect(await total([{ field: 'tier', value: 'smb' }])).toBe(0);
        await store.transaction((tx) => tx.putMany(docs.slice(0, 6)));
        expect(await total([])).toBe(4);
        const after = await keptAndCounted(pool);
        expect(after.kept).toEqual(after.counted);
      });
    });

    it("a generation being built keeps its filter keys staged, a row per record, and its promotion makes them its indexed partition, counted", async () => {
      await withStore(async (store, pool) => {
        const docs = Array.from({ length: 40 }, (_, i) => doc(i % 4 === 0 ? 'other' : 'ws', i + 1));
        await store.transaction((tx) => tx.putMany(docs.slice(0, 10)));
        const first = await store.beginGeneration({ version: 'v2', owner: 'test:1', restart: false, ownerAlive: () => false });
        const tables = async () =>
          (await pool.query<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relname ~ '^csr_record_keys_' AND relkind IN ('r', 'p') ORDER BY 1")).rows.map((row) => row.name);
        const g = first.generation;
        expect(await tables()).toEqual(['csr_record_keys_g1', `csr_record_keys_staged_g${g}`]);
        // A restart drops what the abandoned generation staged.
        const building = await store.beginGeneration({ version: 'v2', owner: 'test:1', restart: true, ownerAlive: () => false });
        const n = building.generation;
        expect(await tables()).toEqual(['csr_record_keys_g1', `csr_record_keys_staged_g${n}`]);
        const inGeneration = { generation: n };
        await store.transaction((tx) => tx.putMany(docs), inGeneration);
        await store.transaction(async (tx) => {
          await tx.put({ ...docs[1]!, fields: { ...docs[1]!.fields, tier: 'Mid', tags: [] }, revision: 1 });
          await tx.delete(docs[2]!.workspaceId, 'clients', docs[2]!.id);
        }, inGeneration);
        const staged = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM csr_record_keys_staged_g${n}`);
        expect(staged.rows[0]!.n).toBe(39);
        // No keys' partition while they are staged: a writer that knew only key rows fails instead of leaving keys out.
        await expect(pool.query(`INSERT INTO csr_record_keys VALUES (${n}, 'ws', 'clients', '["tier","smb"]', '0', 'x')`)).rejects.toThrow(/no partition/);

        await store.promoteGeneration(n, 'records', async () => {});
        expect(await tables()).toEqual(['csr_record_keys_g1', `csr_record_keys_g${n}`]);
        const attached = await pool.query<{ indexes: number }>(
          `SELECT count(*)::int AS indexes FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indexrelid WHERE i.indrelid = 'csr_record_keys_g${n}'::regclass`,
        );
        // The primary key and the by-record index, each a partition of the parent's.
        expect(attached.rows[0]!.indexes).toBe(2);
        const { kept, counted } = await keptAndCounted(pool);
        expect(kept.filter((row) => row.startsWith(`${n}|`)).length).toBeGreaterThan(10);
        expect(kept).toEqual(counted);
        const total = async (filters: FindQuery['filters']) => (await store.find({ workspaceId: 'ws', object: 'clients', filters, limit: 5, offset: 0 })).total;
        const live = docs.filter((d, i) => d.workspaceId === 'ws' && i !== 2).map((d) => (d === docs[1] ? { ...d, fields: { ...d.fields, tier: 'Mid' } } : d));
        expect(await total([{ field: 'tier', value: 'smb' }])).toBe(live.filter((d) => d.fields['tier'] === 'SMB').length);
        expect(await total([{ field: 'tier', value: 'mid' }])).toBe(1);
        // Written after the promotion: the keys are rows again.
        await store.transaction((tx) => tx.put({ ...docs[3]!, fields: { ...docs[3]!.fields, tier: 'Mid' }, revision: 1 }));
        expect(await total([{ field: 'tier', value: 'mid' }])).toBe(2);
        await store.dropUnusedGenerations();
      });
    });

    it('a store whose schema predates the kept counts is counted when it upgrades, and its lists answer the same totals', async () => {
      const url = await database();
      const pool = openPool({ url, max: 1 });
      try {
        const before = READ_MIGRATION.steps.findIndex((step) => step.includes('CREATE TABLE csr_record_counts'));
        expect(before).toBeGreaterThan(0);
        await migrate(pool, { component: READ_MIGRATION.component, steps: READ_MIGRATION.steps.slice(0, before) });
        // Rows as the previous version wrote them: a live generation and one being built.
        await pool.query("CREATE TABLE csr_records_g2 PARTITION OF csr_records FOR VALUES IN (2); CREATE TABLE csr_record_keys_g2 PARTITION OF csr_record_keys FOR VALUES IN (2)");
        for (const [generation, n] of [[1, 7], [2, 3]] as const) {
          for (let i = 0; i < n; i++) {
            const id = `r${generation}-${i}`;
            await pool.query(
              `INSERT INTO csr_records (generation, workspace_id, object, id, fields, calculated, created_at, updated_at, updated_ms, created_position, revision, escaped)
               VALUES ($1, 'ws', 'clients', $2, '{}', '{}', '', '', 0, $3, 0, false)`,
              [generation, id, formatPosition(BigInt(i + 1))],
            );
            await pool.query("INSERT INTO csr_record_keys VALUES ($1, 'ws', 'clients', $2, $3, $4)", [generation, i % 2 === 0 ? '["tier","smb"]' : '["tier","enterprise"]', formatPosition(BigInt(i + 1)), id]);
          }
        }
        const store = await onOwnPool(url, openPostgresReadStore);
        try {
          const { kept, counted } = await keptAndCounted(pool);
          expect(kept).toEqual(['1|ws|clients|["tier","enterprise"]|3', '1|ws|clients|["tier","smb"]|4', '1|ws|clients||7', '2|ws|clients|["tier","enterprise"]|1', '2|ws|clients|["tier","smb"]|2', '2|ws|clients||3']);
          expect(kept).toEqual(counted);
          expect((await store.find({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'tier', value: 'smb' }], limit: 2, offset: 0 })).total).toBe(4);
          // The upgraded generations keep counting.
          await store.transaction((tx) => tx.put(doc('ws', 100, { fields: { tier: 'SMB' } })));
          expect((await store.find({ workspaceId: 'ws', object: 'clients', filters: [{ field: 'tier', value: 'smb' }], limit: 2, offset: 0 })).total).toBe(5);
          expect((await store.find({ workspaceId: 'ws', object: 'clients', filters: [], limit: 2, offset: 0 })).total).toBe(8);
        } finally {
          await store.close();
        }
      } finally {
        await pool.end();
      }
    });

    it('a promotion while the live projector writes: its batches before land in the old generation and are caught up, those after in the new one', async () => {
      const url = await database();
      const projector = await onOwnPool(url, openPostgresReadStore);
      const rebuild = await onOwnPool(url, openPostgresReadStore);
      try {
        const building = await rebuild.beginGeneration({ version: 'v2', owner: 'test:1', restart: false, ownerAlive: () => false });
        const before = doc('ws', 1);
        await projector.transaction(async (tx) => {
          await tx.put(before);
          await tx.setCheckpoint('records', formatPosition(1n));
        });
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        // The promotion holds the pointer while it catches up; the projector's next batch waits for it.
        const promoting = rebuild.promoteGeneration(building.generation, 'records', async (tx, _from, to) => {
          await tx.put(before);
          await tx.setCheckpoint('records', to);
          await held;
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        const after = doc('ws', 2);
        const writing = projector.transaction(async (tx) => {
          await tx.put(after);
          await tx.setCheckpoint('records', formatPosition(2n));
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        release();
        await promoting;
        await writing;
        expect((await projector.generations()).live).toBe(building.generation);
        expect((await projector.find({ workspaceId: 'ws', object: 'clients', filters: [], limit: 10, offset: 0 })).documents.map((d) => d.id)).toEqual([before.id, after.id]);
        expect(await projector.checkpoint('records')).toBe(formatPosition(2n));
      } finally {
        await projector.close();
        await rebuild.close();
      }
    });
  });
});


import type { Position } from '../../eventstore/position.js';
import pg from 'pg';
import { mappingPostgresErrors } from '../../postgres/errors.js';
import { migrate } from '../../postgres/migrate.js';
import { inTransaction, namedStatementRefused, onTransactionClient, preparedQuery, transactionQuery, type Pool, type PoolClient } from '../../postgres/pool.js';
import { FINDS_IN_FLIGHT, REBUILD_SUPERSEDED } from '../port.js';
import { inFlight } from '../../core/inFlight.js';
import type { BeginGeneration, FindQuery, FindResult, LinkEdge, ReadStore, ReadTransaction, RecordDocument, RunnerStatus } from '../port.js';
import { Analyzer } from './analyze.js';
import { CheckpointWatcher } from './checkpointWatcher.js';
import { findPlan } from './findPlan.js';
import { isNameFind, NameFinds } from './nameFinds.js';
import { PointReads } from './pointReads.js';
import { createPartitions, dropPartitions, fromPointer, generationsChange, lockPointer, partitionedGenerations, type PointerRow } from './generations.js';
import { documentWrites } from './documentWrites.js';
import { deleteStaged, findAllStaged, keysStaged, mergeStagedKeys } from './stagedKeys.js';
import { DOCUMENT_COLUMNS, fromRow, toStoredRecord, type DocumentRow } from './rows.js';
import { CHECKPOINT_CHANNEL, LIVE, partitionsOf, POINTER_ID, READ_MIGRATION } from './schema.js';

/**
 * The read store on PostgreSQL (tables and indexes: ./schema.ts). A projection's transaction is one
 * PostgreSQL transaction: its documents, link edges and checkpoint commit together, and the
 * checkpoint is announced (pg_notify, delivered at commit) to every process waiting for it
 * (./checkpointWatcher.ts). A checkpoint never moves backwards (GREATEST), so a projector that has
 * lost its lease and commits a late batch cannot undo a newer one; with `fence`, the checkpoint
 * write also checks the caller's lease in the same transaction and fails the batch when lost.
 */

export interface PostgresReadStoreOptions {
  /** The process's pool, shared with the other adapters: close() never ends it. */
  pool: Pool;
  /**
   * An SQL expression (its values inlined) that every live checkpoint write evaluates first, in the
   * same statement: it raises when the writer may no longer write (its projector lease was taken
   * over), which fails the statement and rolls the whole batch back; it may also throw at once.
   * Null or absent: only the never-backwards rule applies.
   */
  fence?: () => string | null;
  /** How often waiters look at the checkpoints while notifications arrive (a safety net; ./checkpointWatcher.ts). */
  checkpointPollMs?: number;
}

/**
 * The class of the transaction-level advisory lock that makes the transactions of one generation
 * take turns (second key: the generation), as the embedded store's single writer does: a batch
 * reads documents and writes them back (roll-ups count, links resolve), and under READ COMMITTED
 * two at once would each write what it read before the other's commit, losing one. A
 * transaction-level lock also holds behind transaction-pooling proxies, where a session lock
 * would not. Only projection transactions take it; reads never wait for it.
 */
const WRITER_LOCK = 7_419_300;

interface PageRow extends DocumentRow {
  total: number;
}

function byCreation(a: DocumentRow, b: DocumentRow): number {
  if (a.created_position !== b.created_position) return a.created_position < b.created_position ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The page's rows (in creation order) and the total, from a findPlan statement's answer. */
function pageOf(rows: PageRow[]): { rows: DocumentRow[]; total: number } {
  const total = rows[0]?.total ?? 0;
  // A page past the end is one row of nulls beside the total.
  const found = rows.filter((row) => row.id !== null);
  return { rows: found.sort(byCreation), total };
}

/**
 * The columns for findStored and getStored: a record whose rendering starts with the shape comes
 * without its document's columns (NULL), so the driver makes no string of them, nor parses its
 * values: on a page of 100 that is most of the strings the driver would make.
 */
function storedColumns(shapeParam: string): string {
  const unlessShaped = (column: string) => `CASE WHEN starts_with(r.rendered, ${shapeParam}) THEN NULL ELSE r.${column} END AS ${column}`;
  return `r.id, r.created_position, r.revision, r.rendered, r.escaped, ${['workspace_id', 'object', 'name', 'created_at', 'updated_at', 'fields', 'calculated'].map(unlessShaped).join(', ')}`;
}

async function notifyCheckpoint(client: PoolClient, projection: string, position: Position | null): Promise<void> {
  await client.query('SELECT pg_notify($1, $2)', [CHECKPOINT_CHANNEL, JSON.stringify([projection, position])]);
}

export async function openPostgresReadStore(options: PostgresReadStoreOptions): Promise<ReadStore> {
  const { pool, fence } = options;
  await migrate(pool, READ_MIGRATION);

  async function checkpoint(projection: string, db: Pick<Pool, 'query'> = pool): Promise<Position | null> {
    const found = await db.query<{ position: string }>('SELECT position FROM csr_checkpoints WHERE projection = $1', [projection]);
    return found.rows[0]?.position ?? null;
  }

  const watcher = new CheckpointWatcher(pool, (projection) => checkpoint(projection), options.checkpointPollMs);
  const analyzer = new Analyzer(pool);
  const pointReads = new PointReads(pool, storedColumns);
  const nameFinds = new NameFinds(pool);
  let closed = false;

  async function getIn(db: Pick<Pool, 'query'>, generation: string, params: unknown[]): Promise<DocumentRow | null> {
    const sql = `SELECT ${DOCUMENT_COLUMNS} FROM csr_records r WHERE r.generation = ${generation} AND r.workspace_id = $1 AND r.object = $2 AND r.id = $3`;
    const found = db === pool ? await preparedQuery<DocumentRow>(pool, sql, params) : await db.query<DocumentRow>(sql, params);
    return found.rows[0] ?? null;
  }

  /** Generations being built whose keys this process found staged or not (./stagedKeys.ts): looked up once each. */
  const stagedKeys = new Map<number, boolean>();
  async function staged(client: PoolClient, generation: number, building: boolean): Promise<boolean> {
    if (!building) return false;
    let known = stagedKeys.get(generation);
    if (known === undefined) stagedKeys.set(generation, (known = await keysStaged(client, generation)));
    return known;
  }

  async function writeDocuments(client: PoolClient, generation: number, building: boolean, documents: RecordDocument[]): Promise<void> {
    const keysApart = await staged(client, generation, building);
    const { records, statements } = documentWrites(generation, documents, keysApart);
    analyzer.wrote(generation, records, building, keysApart);
    for (const statement of statements) await transactionQuery(pool, client, statement.text, statement.values);
  }

  /**
   * The transaction API on `client` for `generation` (`building`: a generation being built, whose
   * checkpoint lives in the pointer). Live checkpoints set go to `pending`, written with the COMMIT.
   */
  function transactionApi(client: PoolClient, generation: number, building: boolean, pending: Map<string, Position>): ReadTransaction {
    return {
      async get(workspaceId, object, id) {
        const row = await getIn(client, '$4', [workspaceId, object, id, generation]);
        return row && fromRow(row);
      },
      async getMany(workspaceId, object, ids) {
        if (ids.length === 0) return [];
        const found = await transactionQuery<DocumentRow>(
          pool,
          client,
          `SELECT ${DOCUMENT_COLUMNS} FROM csr_records r WHERE r.generation = $4 AND r.workspace_id = $1 AND r.object = $2 AND r.id = ANY ($3::text[])`,
          [workspaceId, object, [...new Set(ids)], generation],
        );
        return found.rows.map(fromRow);
      },
      async findAll(workspaceId, object, filters) {
        if (await staged(client, generation, building)) return (await client.query<DocumentRow>(findAllStaged(generation, workspaceId, object, filters))).rows.map(fromRow);
        const plan = findPlan({ workspaceId, object, filters }, { value: generation }, DOCUMENT_COLUMNS, null);
        const found = await client.query<DocumentRow>(plan.sql, plan.params);
        return found.rows.map(fromRow);
      },
      put: (document) => writeDocuments(client, generation, building, [document]),
      putMany: (documents) => writeDocuments(client, generation, building, documents),
      async addLinks(edges: LinkEdge[]) {
        if (edges.length === 0) return;
        await client.query(
          `INSERT INTO csr_link_edges (workspace_id, target, object, field, id)
           SELECT "workspaceId", target, object, field, id FROM jsonb_to_recordset($1::jsonb)
             AS e ("workspaceId" text, target text, object text, field text, id text)
           ON CONFLICT DO NOTHING`,
          [JSON.stringify(edges)],
        );
      },
      async delete(workspaceId, object, id) {
        if (await staged(client, generation, building)) {
          await client.query(deleteStaged(generation), [workspaceId, object, id, generation]);
          return;
        }
        await client.query(
          `WITH gone AS (DELETE FROM csr_record_keys WHERE generation = $4 AND workspace_id = $1 AND object = $2 AND id = $3)
           DELETE FROM csr_records WHERE generation = $4 AND workspace_id = $1 AND object = $2 AND id = $3`,
          [workspaceId, object, id, generation],
        );
      },
      async checkpoint(projection) {
        if (!building) {
          await writePending(client, pending);
          return checkpoint(projection, client);
        }
        const found = await client.query<{ position: string | null }>('SELECT building_position AS position FROM csr_read_model WHERE id = $1', [POINTER_ID]);
        return found.rows[0]?.position ?? null;
      },
      async setCheckpoint(projection, position) {
        if (building) {
          await client.query('UPDATE csr_read_model SET building_position = GREATEST(COALESCE(building_position, $2), $2) WHERE id = $1 AND building = $3', [
            POINTER_ID,
            position,
            generation,
          ]);
          return;
        }
        // Written with the COMMIT (commitWith), fenced there; the later of two positions counts, as GREATEST would keep it.
        const earlier = pending.get(projection);
        if (earlier === undefined || earlier < position) pending.set(projection, position);
      },
    };
  }

  /**
   * The live checkpoints set in a transaction as one statement (values inlined, so that it can go
   * with the COMMIT in one simple query): the fence first, then each checkpoint moved forward only,
   * and announced to the waiting processes when the transaction commits.
   */
  function checkpointsStatement(pending: Map<string, Position>): string {
    const fenced = fence?.() ?? null;
    const values = [...pending].map(([projection, position]) => `(${pg.escapeLiteral(projection)}, ${pg.escapeLiteral(position)})`).join(', ');
    return `WITH fenced AS MATERIALIZED (SELECT ${fenced ?? 'true'} AS ok),
      kept AS (
        INSERT INTO csr_checkpoints (projection, position)
        SELECT v.projection, v.position FROM fenced, (VALUES ${values}) AS v (projection, position) WHERE fenced.ok
        ON CONFLICT (projection) DO UPDATE SET position = GREATEST(csr_checkpoints.position, EXCLUDED.position)
        RETURNING projection, position)
      SELECT pg_notify('${CHECKPOINT_CHANNEL}', json_build_array(kept.projection, kept.position)::text) FROM kept`;
  }

  async function writePending(client: PoolClient, pending: Map<string, Position>): Promise<void> {
    if (pending.size === 0) return;
    const statement = checkpointsStatement(pending);
    pending.clear();
    await client.query(statement);
  }

  /**
   * A transaction of a generation's writer (undefined: the live one's), in as few round trips as
   * the work allows: BEGIN goes with the pointer's lock and the writer lock, and what `work` answers
   * to run with the COMMIT goes with it (each a simple query of two statements). A statement that
   * fails stops the ones after it, so a failed fence never commits. A transaction whose named
   * statement the server refused (transactionQuery) wrote nothing: it runs again, plain.
   */
  async function writerTransaction<T>(
    generation: number | undefined,
    work: (client: PoolClient, live: number) => Promise<{ result: T; withCommit?: string }>,
  ): Promise<T> {
    if (generation !== undefined && !Number.isSafeInteger(generation)) throw new RangeError(`not a generation: ${generation}`);
    try {
      return await writerTransactionOnce(generation, work);
    } catch (error) {
      if (!namedStatementRefused(pool, error)) throw error;
      return writerTransactionOnce(generation, work);
    }
  }

  async function writerTransactionOnce<T>(
    generation: number | undefined,
    work: (client: PoolClient, live: number) => Promise<{ result: T; withCommit?: string }>,
  ): Promise<T> {
    return onTransactionClient(pool, async (client) => {
      // A rebuild's batch need not wait for its WAL flush: it commits with its own checkpoint, so
      // a crash loses whole batches that the rebuild then does again, and the promotion's
      // synchronous commit flushes every one before the generation is read.
      const unflushed = generation === undefined ? '' : ", set_config('synchronous_commit', 'off', true) AS unflushed";
      const [, locked] = (await client.query(
        `BEGIN;
         WITH p AS MATERIALIZED (SELECT * FROM csr_read_model WHERE id = '${POINTER_ID}' FOR SHARE)
         SELECT p.*, pg_advisory_xact_lock(${WRITER_LOCK}, ${generation ?? 'p.live'})::text AS locked${unflushed} FROM p`,
      )) as unknown as [unknown, pg.QueryResult<PointerRow>];
      const state = locked.rows[0]!;
      if (generation !== undefined && state.building !== generation) throw new Error(REBUILD_SUPERSEDED);
      const { result, withCommit } = await work(client, state.live);
      await client.query(withCommit === undefined ? 'COMMIT' : `${withCommit}; COMMIT`);
      return result;
    });
  }

  /** A projection's transaction: its checkpoints go with the COMMIT. */
  function projectionTransaction<T>(generation: number | undefined, fn: (tx: ReadTransaction) => Promise<T>): Promise<T> {
    return writerTransaction(generation, async (client, live) => {
      const pending = new Map<string, Position>();
      const result = await fn(transactionApi(client, generation ?? live, generation !== undefined, pending));
      return { result, withCommit: pending.size > 0 ? checkpointsStatement(pending) : undefined };
    });
  }

  /** Never backwards, and announced (the position kept) to the waiting processes when the transaction commits; one statement. */
  async function setLiveCheckpoint(client: PoolClient, projection: string, position: Position): Promise<void> {
    await client.query(
      `WITH kept AS (
         INSERT INTO csr_checkpoints (projection, position) VALUES ($1, $2)
         ON CONFLICT (projection) DO UPDATE SET position = GREATEST(csr_checkpoints.position, EXCLUDED.position)
         RETURNING position)
       SELECT pg_notify($3, json_build_array($1::text, kept.position)::text) FROM kept`,
      [projection, position, CHECKPOINT_CHANNEL],
    );
  }

  async function find(query: FindQuery): Promise<FindResult> {
    if (isNameFind(query)) {
      const { rows, total } = await nameFinds.find(query);
      return { documents: rows.map(fromRow), total };
    }
    const plan = findPlan(query, { sql: LIVE }, DOCUMENT_COLUMNS, query);
    const { rows, total } = pageOf((await preparedQuery<PageRow>(pool, plan.sql, plan.params)).rows);
    return { documents: rows.map(fromRow), total };
  }

  async function findEach(queries: readonly FindQuery[]): Promise<FindResult[]> {
    const results = new Array<FindResult>(queries.length);
    const asked = queries.map((query, at) => ({ query, at }));
    const into = async ({ query, at }: { query: FindQuery; at: number }) => void (results[at] = await find(query));
    // Finds by name asked at once go together, a statement per batch (nameFinds.ts); the others each take a connection.
    await Promise.all([...asked.filter(({ query }) => isNameFind(query)).map(into), inFlight(asked.filter(({ query }) => !isNameFind(query)), FINDS_IN_FLIGHT, into)]);
    return results;
  }

  async function pointer(): Promise<PointerRow> {
    const found = await pool.query<PointerRow>('SELECT * FROM csr_read_model WHERE id = $1', [POINTER_ID]);
    return found.rows[0]!;
  }

  return mappingPostgresErrors<ReadStore>({
    find,
    findEach,

    async findStored(query, shape) {
      if (shape === undefined) {
        const { documents, total } = await find(query);
        return { records: documents.map((document) => ({ id: document.id, rendered: document.rendered ?? null, document: () => document })), total };
      }
      const plan = findPlan(query, { sql: LIVE }, (bind) => storedColumns(bind(shape)), query);
      const { rows, total } = pageOf((await preparedQuery<PageRow>(pool, plan.sql, plan.params)).rows);
      return { records: rows.map(toStoredRecord), total };
    },

    async get(workspaceId, object, id) {
      const row = await getIn(pool, LIVE, [workspaceId, object, id]);
      return row && fromRow(row);
    },

    async getStored(workspaceId, object, id, shape) {
      // With a shape, a record rendered with it comes without its values: no jsonb parsed for a GET.
      const row = await pointReads.read(workspaceId, object, id, shape);
      return row && toStoredRecord(row);
    },

    // The driver only answers asynchronously.
    getStoredNow() {
      return undefined;
    },

    async getMany(workspaceId, object, ids) {
      if (ids.length === 0) return [];
      const found = await pool.query<DocumentRow>(
        `SELECT ${DOCUMENT_COLUMNS} FROM csr_records r WHERE r.generation = ${LIVE} AND r.workspace_id = $1 AND r.object = $2 AND r.id = ANY ($3::text[])`,
        [workspaceId, object, [...new Set(ids)]],
      );
      return found.rows.map(fromRow);
    },

    async linkSources(workspaceId, object, field, target) {
      const found = await pool.query<{ id: string }>('SELECT id FROM csr_link_edges WHERE workspace_id = $1 AND target = $2 AND object = $3 AND field = $4', [
        workspaceId,
        target,
        object,
        field,
      ]);
      return found.rows.map((row) => row.id);
    },

    checkpoint: (projection) => checkpoint(projection),

    async waitForCheckpoint(projection, position, timeoutMs) {
      if (closed) return false;
      return watcher.wait(projection, position, timeoutMs);
    },

    transaction<T>(fn: (tx: ReadTransaction) => Promise<T>, transactionOptions?: { generation?: number }): Promise<T> {
      if (closed) return Promise.reject(new Error('the read store is closed'));
      const committed = projectionTransaction(transactionOptions?.generation, fn);
      // After the commit, and not waited for: statistics for what the batch wrote, when due.
      void committed.then(() => analyzer.settle(), () => undefined);
      return committed;
    },

    async generations() {
      return fromPointer(await pointer());
    },

    beginGeneration(begin: BeginGeneration) {
      // One transaction, the pointer locked: two rebuilds starting at once cannot both win, and the
      // partitions exist exactly when the pointer names them.
      return generationsChange(pool, async (client, pointer) => {
        const state = fromPointer(pointer);
        const building = state.building;
        if (building && building.owner !== begin.owner && begin.ownerAlive(building.owner)) {
          throw new Error(`a rebuild of the read model is already running (${building.owner}); wait for it, or stop it first`);
        }
        if (building && !begin.restart && building.version === begin.version) {
          await client.query('UPDATE csr_read_model SET building_owner = $2 WHERE id = $1', [POINTER_ID, begin.owner]);
          return { ...building, owner: begin.owner, resumed: true };
        }
        if (building) await dropPartitions(client, building.generation);
        const generation = Math.max(state.live, building?.generation ?? 0, ...(await partitionedGenerations(client))) + 1;
        await createPartitions(client, generation);
        stagedKeys.set(generation, true);
        const startedAt = new Date().toISOString();
        await client.query(
          `UPDATE csr_read_model SET building = $2, building_version = $3, building_position = NULL, building_owner = $4, building_started_at = $5 WHERE id = $1`,
          [POINTER_ID, generation, begin.version, begin.owner, startedAt],
        );
        return { generation, version: begin.version, position: null, owner: begin.owner, startedAt, resumed: false };
      });
    },

    async promoteGeneration(generation, projection, catchUp) {
      // The staged keys become the generation's partition, beside the live projector's writes; the
      // catch-up below writes keys as the live generation does.
      await writerTransaction(generation, async (client) => {
        if (await keysStaged(client, generation)) await mergeStagedKeys(client, generation);
        return { result: undefined };
      });
      stagedKeys.set(generation, false);
      // Read as the live generation from the next statement on: planned with statistics of what the rebuild filled.
      await analyzer.analyze(generation);
      // The pointer is locked for the whole switch: the live projector's next batch waits for it,
      // then writes to the new live generation.
      await inTransaction(pool, async (client) => {
        const state = await lockPointer(client, 'UPDATE');
        if (state.building !== generation) throw new Error(REBUILD_SUPERSEDED);
        await client.query('SELECT pg_advisory_xact_lock($1, $2)', [WRITER_LOCK, generation]);
        const tx = transactionApi(client, generation, true, new Map());
        const live = await checkpoint(projection, client);
        const built = await tx.checkpoint(projection);
        if (live !== null && (built === null || built < live)) await catchUp(tx, built, live);
        const final = await tx.checkpoint(projection);
        await client.query(
          `UPDATE csr_read_model SET live = building, live_version = building_version, building = NULL, building_version = NULL,
             building_position = NULL, building_owner = NULL, building_started_at = NULL WHERE id = $1`,
          [POINTER_ID],
        );
        if (final !== null) await setLiveCheckpoint(client, projection, final);
      });
    },

    dropUnusedGenerations() {
      return generationsChange(pool, async (client, pointer) => {
        const state = fromPointer(pointer);
        const unused = (await partitionedGenerations(client)).filter((generation) => generation !== state.live && generation !== state.building?.generation);
        for (const generation of unused) await dropPartitions(client, generation);
        return unused.length;
      });
    },

    async saveRunnerStatus(status: RunnerStatus) {
      await pool.query('INSERT INTO csr_runner_status (name, status) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET status = EXCLUDED.status', [
        status.name,
        JSON.stringify(status),
      ]);
    },

    async runnerStatuses() {
      const found = await pool.query<{ status: RunnerStatus }>('SELECT status FROM csr_runner_status ORDER BY name');
      return found.rows.map((row) => row.status);
    },

    async setLiveVersion(version) {
      await pool.query('UPDATE csr_read_model SET live_version = $2 WHERE id = $1', [POINTER_ID, version]);
    },

    async reset(projection) {
      await generationsChange(pool, async (client, state) => {
        const { records, keys, counts } = partitionsOf(state.live);
        await client.query('DELETE FROM csr_checkpoints WHERE projection = $1', [projection]);
        // TRUNCATE fires no delete trigger: the counts go with the rows.
        await client.query(`TRUNCATE ${records}, ${keys}, ${counts}, csr_link_edges`);
        await notifyCheckpoint(client, projection, null);
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      watcher.close();
      analyzer.close();
    },
  });
}

import { MongoClient, type ClientSession, type Collection, type Db, type TransactionOptions } from 'mongodb';
import { hasReached, type Position } from '../../eventstore/position.js';
import { FINDS_IN_FLIGHT, REBUILD_SUPERSEDED } from '../port.js';
import { inFlight } from '../../core/inFlight.js';
import type { BeginGeneration, FieldFilter, FindQuery, FindResult, ReadStore, ReadTransaction, RecordDocument, RunnerStatus } from '../port.js';
import {
  fromPointer,
  nextGeneration,
  POINTER_ID,
  promoted,
  READ_MODEL,
  recordsCollection,
  RUNNER_STATUS,
  unusedCollections,
  type MongoPointer,
} from './generations.js';
import {
  CHECKPOINTS,
  LINK_EDGES,
  LINK_EDGE_INDEXES,
  RECORD_INDEXES,
  RECORD_SORT,
  fromMongoRecord,
  toStoredRecord,
  recordKey,
  toMongoFilter,
  toMongoRecord,
  toBulkReplacements,
  toMongoLinkEdge,
  toPaging,
  type MongoCheckpoint,
  type MongoLinkEdge,
  type MongoRecord,
} from './mapping.js';
import { mappingStorageErrors } from './storageFull.js';

/**
 * The production read store on MongoDB. Collections: `records` (every projected document, see
 * ./mongodbMapping.ts for the shape and indexes) and `checkpoints` (one document per projection).
 *
 * REQUIRES A REPLICA SET (a single-node one is enough, see docker-compose.yml): `transaction` runs
 * in a multi-document transaction (session.withTransaction, snapshot reads, majority writes), so a
 * projection's writes and its checkpoint commit together and a replayed event is a no-op. On a
 * standalone server `transaction` fails with an error that says so.
 *
 * `withTransaction` may run `fn` more than once (transient transaction errors, commit retries): `fn`
 * must only read and write through the transaction it is given, which projections do.
 */

export type MongoStoreOptions = { client: MongoClient; dbName?: string } | { url: string; dbName?: string };

const TRANSACTION_OPTIONS: TransactionOptions = {
  readConcern: { level: 'snapshot' },
  writeConcern: { w: 'majority' },
  readPreference: 'primary',
};

/** How often waitForCheckpoint looks at the checkpoints collection while someone waits. */
const CHECKPOINT_POLL_MS = 15;

/** Opens (and when given a url, connects) a client; `owned` says whether close() must close it. */
export async function mongoDatabase(options: MongoStoreOptions): Promise<{ client: MongoClient; db: Db; owned: boolean }> {
  if ('client' in options) return { client: options.client, db: options.client.db(options.dbName), owned: false };
  const client = new MongoClient(options.url);
  await client.connect();
  return { client, db: client.db(options.dbName), owned: true };
}

export async function openMongoReadStore(options: MongoStoreOptions): Promise<ReadStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const checkpoints = db.collection<MongoCheckpoint>(CHECKPOINTS);
  const linkEdges = db.collection<MongoLinkEdge>(LINK_EDGES);
  await linkEdges.createIndexes(LINK_EDGE_INDEXES);
  const pointers = db.collection<MongoPointer>(READ_MODEL);
  const runners = db.collection<RunnerStatus & { _id: string }>(RUNNER_STATUS);
  const recordsOf = (generation: number) => db.collection<MongoRecord>(recordsCollection(generation));
  await recordsOf(1).createIndexes(RECORD_INDEXES);
  const watcher = new CheckpointWatcher(checkpoints);
  let closed = false;

  /** Read first by every read and transaction: a promotion switches every node at its commit. */
  async function pointer(session?: ClientSession): Promise<MongoPointer | null> {
    return pointers.findOne({ _id: POINTER_ID }, session ? { session } : {});
  }
  const live = async (session?: ClientSession) => recordsOf(fromPointer(await pointer(session)).live);

  async function get(workspaceId: string, object: string, id: string, session?: ClientSession): Promise<RecordDocument | null> {
    const records = await live(session);
    const stored = await records.findOne({ _id: recordKey(workspaceId, object, id) }, session ? { session } : {});
    return stored === null ? null : fromMongoRecord(stored);
  }

  async function checkpoint(projection: string, session?: ClientSession): Promise<Position | null> {
    const stored = await checkpoints.findOne({ _id: projection }, session ? { session } : {});
    return stored?.position ?? null;
  }

  /** `generation`: the one being built (its checkpoint lives in the pointer); else the live one. */
  async function transactionApi(session: ClientSession, generation?: number): Promise<ReadTransaction> {
    const state = fromPointer(await pointer(session));
    if (generation !== undefined && state.building?.generation !== generation) {
      throw new Error(REBUILD_SUPERSEDED);
    }
    const records = recordsOf(generation ?? state.live);
    return {
      async get(workspaceId, object, id) {
        const stored = await records.findOne({ _id: recordKey(workspaceId, object, id) }, { session });
        return stored === null ? null : fromMongoRecord(stored);
      },
      async findAll(workspaceId: string, object: string, filters: FieldFilter[]) {
        const found = await records
          .find(toMongoFilter({ workspaceId, object, filters }), { session, sort: RECORD_SORT })
          .toArray();
        return found.map(fromMongoRecord);
      },
      async put(document) {
        const stored = toMongoRecord(document);
        await records.replaceOne({ _id: stored._id }, stored, { upsert: true, session });
      },
      async putMany(documents) {
        if (documents.length === 0) return;
        await records.bulkWrite(toBulkReplacements(documents), { session, ordered: false });
      },
      async addLinks(edges) {
        if (edges.length === 0) return;
        await linkEdges.bulkWrite(
          edges.map((edge) => {
            const stored = toMongoLinkEdge(edge);
            return { replaceOne: { filter: { _id: stored._id }, replacement: stored, upsert: true } };
          }),
          { session, ordered: false },
        );
      },
      async delete(workspaceId, object, id) {
        await records.deleteOne({ _id: recordKey(workspaceId, object, id) }, { session });
      },
      async checkpoint(projection) {
        if (generation === undefined) return checkpoint(projection, session);
        return fromPointer(await pointer(session)).building?.position ?? null;
      },
      async setCheckpoint(projection, position) {
        if (generation !== undefined) {
          await pointers.updateOne({ _id: POINTER_ID }, { $set: { buildingPosition: position } }, { session });
          return;
        }
        // $max: a checkpoint never moves backwards, even when a projector that has just lost its
        // lease commits a late batch (positions are fixed-width, so text order is log order).
        await checkpoints.updateOne({ _id: projection }, { $max: { position } }, { upsert: true, session });
      },
    };
  }

  async function inTransaction<T>(fn: (session: ClientSession) => Promise<T>): Promise<T> {
    if (closed) throw new Error('the read store is closed');
    return inMongoTransaction(client, fn);
  }

  const collectionNames = async () => (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);

  async function find(query: FindQuery): Promise<FindResult> {
    const records = await live();
    const filter = toMongoFilter(query);
    const paging = toPaging(query);
    const [documents, total] = await Promise.all([
      paging === null
        ? Promise.resolve([])
        : records.find(filter, { sort: RECORD_SORT, skip: paging.skip, limit: paging.limit }).toArray(),
      records.countDocuments(filter),
    ]);
    return { documents: documents.map(fromMongoRecord), total };
  }

  return mappingStorageErrors({
    find,
    findEach: (queries) => inFlight(queries, FINDS_IN_FLIGHT, find),

    async findStored(query: FindQuery) {
      const { documents, total } = await find(query);
      return { records: documents.map(toStoredRecord), total };
    },

    get: (workspaceId, object, id) => get(workspaceId, object, id),

    async getStored(workspaceId, object, id) {
      const document = await get(workspaceId, object, id);
      return document === null ? null : toStoredRecord(document);
    },

    // The driver only answers asynchronously.
    getStoredNow() {
      return undefined;
    },

    async getMany(workspaceId, object, ids) {
      if (ids.length === 0) return [];
      const keys = [...new Set(ids)].map((id) => recordKey(workspaceId, object, id));
      const found = await (await live()).find({ _id: { $in: keys } }).toArray();
      return found.map(fromMongoRecord);
    },

    async linkSources(workspaceId, object, field, target) {
      const found = await linkEdges.find({ workspaceId, target, object, field }, { projection: { id: 1 } }).toArray();
      return found.map((edge) => edge.id);
    },

    checkpoint: (projection) => checkpoint(projection),

    async waitForCheckpoint(projection, position, timeoutMs) {
      if (closed) return false;
      return watcher.wait(projection, position, timeoutMs);
    },

    transaction<T>(fn: (tx: ReadTransaction) => Promise<T>, options?: { generation?: number }): Promise<T> {
      return inTransaction(async (session) => fn(await transactionApi(session, options?.generation)));
    },

    async generations() {
      return fromPointer(await pointer());
    },

    async beginGeneration(begin: BeginGeneration) {
      await pointers.updateOne(
        { _id: POINTER_ID },
        { $setOnInsert: { live: 1, liveVersion: null, building: null, buildingVersion: null, buildingPosition: null, buildingOwner: null, buildingStartedAt: null } },
        { upsert: true },
      );
      const current = await pointer();
      const state = fromPointer(current);
      const building = state.building;
      if (building && building.owner !== begin.owner && begin.ownerAlive(building.owner)) {
        throw new Error(`a rebuild of the read model is already running (${building.owner}); wait for it, or stop it first`);
      }
      if (building && !begin.restart && building.version === begin.version) {
        await pointers.updateOne({ _id: POINTER_ID, building: building.generation }, { $set: { buildingOwner: begin.owner } });
        return { ...building, owner: begin.owner, resumed: true };
      }
      if (building) await recordsOf(building.generation).drop().catch(() => undefined);
      const generation = nextGeneration(state, await collectionNames());
      // Collections and indexes are made outside any transaction, before the pointer names them.
      await recordsOf(generation).createIndexes(RECORD_INDEXES);
      const startedAt = new Date().toISOString();
      const claimed = await pointers.updateOne(
        { _id: POINTER_ID, building: current?.building ?? null },
        { $set: { building: generation, buildingVersion: begin.version, buildingPosition: null, buildingOwner: begin.owner, buildingStartedAt: startedAt } },
      );
      if (claimed.modifiedCount !== 1) throw new Error('another rebuild of the read model started at the same moment; try again');
      return { generation, version: begin.version, position: null, owner: begin.owner, startedAt, resumed: false };
    },

    async promoteGeneration(generation, projection, catchUp) {
      await inTransaction(async (session) => {
        const tx = await transactionApi(session, generation);
        const liveCheckpoint = await checkpoint(projection, session);
        const built = await tx.checkpoint(projection);
        if (liveCheckpoint !== null && (built === null || built < liveCheckpoint)) await catchUp(tx, built, liveCheckpoint);
        const final = await tx.checkpoint(projection);
        const current = await pointer(session);
        await pointers.replaceOne({ _id: POINTER_ID }, promoted(current!), { session });
        if (final !== null) await checkpoints.updateOne({ _id: projection }, { $max: { position: final } }, { upsert: true, session });
      });
    },

    async dropUnusedGenerations() {
      const unused = unusedCollections(fromPointer(await pointer()), await collectionNames());
      for (const name of unused) await db.collection(name).drop();
      return unused.length;
    },

    async saveRunnerStatus(status) {
      await runners.replaceOne({ _id: status.name }, { ...status }, { upsert: true });
    },

    async runnerStatuses() {
      const found = await runners.find({}, { sort: { _id: 1 } }).toArray();
      return found.map(({ _id, ...status }) => status);
    },

    async setLiveVersion(version) {
      await pointers.updateOne(
        { _id: POINTER_ID },
        { $set: { liveVersion: version }, $setOnInsert: { live: 1, building: null, buildingVersion: null, buildingPosition: null, buildingOwner: null, buildingStartedAt: null } },
        { upsert: true },
      );
    },

    async reset(projection) {
      // Not one transaction (a large read model would outgrow it): the checkpoint goes first, so an
      // interrupted reset leaves a projection that rebuilds from the start of the log, where every
      // document is written again (upsert) or deleted by the events that deleted it.
      await checkpoints.deleteOne({ _id: projection });
      await (await live()).deleteMany({});
      await linkEdges.deleteMany({});
    },

    async close() {
      if (closed) return;
      closed = true;
      watcher.stop();
      if (owned) await client.close();
    },
  });
}

/**
 * Runs `fn` in a snapshot transaction with majority writes (retried by the driver on transient
 * errors), ending the session whatever happens. Shared by the MongoDB adapters.
 */
export async function inMongoTransaction<T>(client: MongoClient, fn: (session: ClientSession) => Promise<T>): Promise<T> {
  const session = client.startSession();
  try {
    return await session.withTransaction(() => fn(session), TRANSACTION_OPTIONS);
  } catch (error) {
    throw explainTransactionError(error);
  } finally {
    await session.endSession();
  }
}

/** MongoDB's own words for "transactions need a replica set" are cryptic; say what to do. */
export function explainTransactionError(error: unknown): unknown {
  const message = error instanceof Error ? error.message : '';
  if (/Transaction numbers are only allowed on a replica set member or mongos/i.test(message)) {
    return new Error(
      'MongoDB transactions need a replica set: start mongod with --replSet (a single-node replica set is enough) and run rs.initiate()',
      { cause: error },
    );
  }
  return error;
}

interface Waiter {
  position: Position;
  deadline: number;
  resolve(reached: boolean): void;
}

/**
 * Serves every waitForCheckpoint of this process with one poll per projection and interval, so many
 * waiting requests cost one indexed read each 15 ms. Polling (not a change stream) sees checkpoints
 * written by any process, including projectors on other machines.
 */
class CheckpointWatcher {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  private stopped = false;

  constructor(private readonly checkpoints: Collection<MongoCheckpoint>) {}

  async wait(projection: string, position: Position, timeoutMs: number): Promise<boolean> {
    const current = await this.checkpoints.findOne({ _id: projection });
    if (hasReached(current?.position ?? null, position)) return true;
    if (timeoutMs <= 0 || this.stopped) return false;
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { position, deadline: Date.now() + timeoutMs, resolve };
      let set = this.waiters.get(projection);
      if (!set) this.waiters.set(projection, (set = new Set()));
      set.add(waiter);
      this.schedule();
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const set of this.waiters.values()) for (const waiter of set) waiter.resolve(false);
    this.waiters.clear();
  }

  private schedule(): void {
    if (this.timer || this.polling || this.stopped || this.waiters.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.poll();
    }, CHECKPOINT_POLL_MS);
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      const projections = [...this.waiters.keys()];
      const found = await this.checkpoints.find({ _id: { $in: projections } }).toArray();
      const positions = new Map(found.map((checkpoint) => [checkpoint._id, checkpoint.position]));
      const now = Date.now();
      for (const projection of projections) {
        const set = this.waiters.get(projection);
        if (!set) continue;
        for (const waiter of set) {
          if (hasReached(positions.get(projection) ?? null, waiter.position)) {
            set.delete(waiter);
            waiter.resolve(true);
          } else if (now >= waiter.deadline) {
            set.delete(waiter);
            waiter.resolve(false);
          }
        }
        if (set.size === 0) this.waiters.delete(projection);
      }
    } catch {
      // A failed poll (failover, network) is retried on the next tick; deadlines still apply.
      const now = Date.now();
      for (const [projection, set] of this.waiters) {
        for (const waiter of set) {
          if (now >= waiter.deadline) {
            set.delete(waiter);
            waiter.resolve(false);
          }
        }
        if (set.size === 0) this.waiters.delete(projection);
      }
    } finally {
      this.polling = false;
      this.schedule();
    }
  }
}

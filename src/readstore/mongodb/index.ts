import { MongoClient, type ClientSession, type Collection, type Db, type TransactionOptions } from 'mongodb';
import { hasReached, type Position } from '../../eventstore/position.js';
import type { FieldFilter, FindQuery, FindResult, ReadStore, ReadTransaction, RecordDocument } from '../port.js';
import {
  CHECKPOINTS,
  LINK_EDGES,
  LINK_EDGE_INDEXES,
  RECORDS,
  RECORD_INDEXES,
  RECORD_SORT,
  fromMongoRecord,
  recordKey,
  toMongoFilter,
  toMongoRecord,
  toMongoLinkEdge,
  toPaging,
  type MongoCheckpoint,
  type MongoLinkEdge,
  type MongoRecord,
} from './mapping.js';

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
  const records = db.collection<MongoRecord>(RECORDS);
  const checkpoints = db.collection<MongoCheckpoint>(CHECKPOINTS);
  const linkEdges = db.collection<MongoLinkEdge>(LINK_EDGES);
  await linkEdges.createIndexes(LINK_EDGE_INDEXES);
  await records.createIndexes(RECORD_INDEXES);
  const watcher = new CheckpointWatcher(checkpoints);
  let closed = false;

  async function get(workspaceId: string, object: string, id: string, session?: ClientSession): Promise<RecordDocument | null> {
    const stored = await records.findOne({ _id: recordKey(workspaceId, object, id) }, session ? { session } : {});
    return stored === null ? null : fromMongoRecord(stored);
  }

  async function checkpoint(projection: string, session?: ClientSession): Promise<Position | null> {
    const stored = await checkpoints.findOne({ _id: projection }, session ? { session } : {});
    return stored?.position ?? null;
  }

  function transactionApi(session: ClientSession): ReadTransaction {
    return {
      get: (workspaceId, object, id) => get(workspaceId, object, id, session),
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
      checkpoint: (projection) => checkpoint(projection, session),
      async setCheckpoint(projection, position) {
        // $max: a checkpoint never moves backwards, even when a projector that has just lost its
        // lease commits a late batch (positions are fixed-width, so text order is log order).
        await checkpoints.updateOne({ _id: projection }, { $max: { position } }, { upsert: true, session });
      },
    };
  }

  return {
    async find(query: FindQuery): Promise<FindResult> {
      const filter = toMongoFilter(query);
      const paging = toPaging(query);
      const [documents, total] = await Promise.all([
        paging === null
          ? Promise.resolve([])
          : records.find(filter, { sort: RECORD_SORT, skip: paging.skip, limit: paging.limit }).toArray(),
        records.countDocuments(filter),
      ]);
      return { documents: documents.map(fromMongoRecord), total };
    },

    get: (workspaceId, object, id) => get(workspaceId, object, id),

    async getMany(workspaceId, object, ids) {
      if (ids.length === 0) return [];
      const keys = [...new Set(ids)].map((id) => recordKey(workspaceId, object, id));
      const found = await records.find({ _id: { $in: keys } }).toArray();
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

    async transaction<T>(fn: (tx: ReadTransaction) => Promise<T>): Promise<T> {
      if (closed) throw new Error('the read store is closed');
      const session = client.startSession();
      try {
        return await session.withTransaction(() => fn(transactionApi(session)), TRANSACTION_OPTIONS);
      } catch (error) {
        throw explainTransactionError(error);
      } finally {
        await session.endSession();
      }
    },

    async reset(projection) {
      // Not one transaction (a large read model would outgrow it): the checkpoint goes first, so an
      // interrupted reset leaves a projection that rebuilds from the start of the log, where every
      // document is written again (upsert) or deleted by the events that deleted it.
      await checkpoints.deleteOne({ _id: projection });
      await records.deleteMany({});
      await linkEdges.deleteMany({});
    },

    async close() {
      if (closed) return;
      closed = true;
      watcher.stop();
      if (owned) await client.close();
    },
  };
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

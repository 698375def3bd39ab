import { randomUUID } from 'node:crypto';
import { MongoClient, type Document } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { formatPosition } from '../../src/eventstore/position.js';
import { openMongoReadStore } from '../../src/readstore/mongodb/index.js';
import { acquireLease, releaseLease } from '../../src/readstore/mongodb/lease.js';
import { RECORDS, RECORD_INDEXES, RECORD_SORT, toMongoFilter, type MongoRecord } from '../../src/readstore/mongodb/mapping.js';
import type { FindQuery, RecordDocument } from '../../src/readstore/port.js';
import { beforeTimer } from '../support/until.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { readStoreContract } from './readstore.contract.js';

/**
 * The ReadStore contract against a real MongoDB replica set (MONGODB_URL, or a `mongo:7` container
 * when Docker answers; skipped with one line otherwise, see ./backends.ts), plus what is particular
 * to MongoDB: other processes' checkpoints, write-conflict retries, the query plans behind the
 * indexes, and the projector lease. Every suite works in its own database, dropped afterwards.
 */

const backend = await mongoBackend();

describeBackend('MongoDB read store', backend, (url) => {
  const { client, database } = mongoDatabases(url);

  readStoreContract('mongodb', () => openMongoReadStore({ client: client(), dbName: database() }));

  function doc(workspaceId: string, n: number, overrides: Partial<RecordDocument> = {}): RecordDocument {
    const at = new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString();
    return {
      workspaceId,
      object: 'clients',
      id: randomUUID(),
      name: `Client ${n}`,
      fields: { n, tier: n % 2 === 0 ? 'SMB' : 'Enterprise' },
      calculated: {},
      createdAt: at,
      updatedAt: at,
      createdPosition: formatPosition(BigInt(n)),
      revision: 0,
      ...overrides,
    };
  }

  describe('MongoDB specifics', () => {
    it('a checkpoint moved by another process (its own client) wakes a waiter within moments', async () => {
      const dbName = database();
      const projectorClient = new MongoClient(url);
      await projectorClient.connect();
      const api = await openMongoReadStore({ client: client(), dbName });
      const projector = await openMongoReadStore({ client: projectorClient, dbName });
      try {
        // Its own timeout a minute away: only the other client's commit can wake it in time, within
        // a second of that commit (not counting how long the commit itself takes).
        const waiting = api.waitForCheckpoint('records', formatPosition(2n), 60_000);
        const written = doc('ws', 1);
        await projector.transaction(async (tx) => {
          await tx.put(written);
          await tx.setCheckpoint('records', formatPosition(2n));
        });
        expect(await beforeTimer(waiting, 1_000)).toBe(true);
        // Read your writes: once the checkpoint is seen, so is the document.
        expect(await api.get('ws', 'clients', written.id)).toEqual(written);
        expect(await api.waitForCheckpoint('records', formatPosition(9n), 60)).toBe(false);
      } finally {
        await api.close();
        await projector.close();
        await projectorClient.close();
      }
    });

    it('concurrent transactions on one document all apply (write conflicts are retried)', async () => {
      const store = await openMongoReadStore({ client: client(), dbName: database() });
      try {
        const counter = doc('ws', 1, { fields: { count: 0 } });
        await store.transaction((tx) => tx.put(counter));
        await Promise.all(
          Array.from({ length: 10 }, () =>
            store.transaction(async (tx) => {
              const current = (await tx.get('ws', 'clients', counter.id))!;
              await tx.put({ ...current, fields: { count: (current.fields.count as number) + 1 } });
            }),
          ),
        );
        expect((await store.get('ws', 'clients', counter.id))!.fields.count).toBe(10);
      } finally {
        await store.close();
      }
    });

    it('a checkpoint never moves backwards', async () => {
      const store = await openMongoReadStore({ client: client(), dbName: database() });
      try {
        await store.transaction((tx) => tx.setCheckpoint('records', formatPosition(10n)));
        await store.transaction((tx) => tx.setCheckpoint('records', formatPosition(4n)));
        expect(await store.checkpoint('records')).toBe(formatPosition(10n));
      } finally {
        await store.close();
      }
    });

    it('lists, filters and name matches are read in order from an index (no collection scan, no sort)', async () => {
      const dbName = database();
      const store = await openMongoReadStore({ client: client(), dbName });
      try {
        await store.transaction(async (tx) => {
          for (let n = 1; n <= 50; n++) await tx.put(doc('ws', n));
        });
        const records = client().db(dbName).collection<MongoRecord>(RECORDS);
        const base: FindQuery = { workspaceId: 'ws', object: 'clients', filters: [], limit: 10, offset: 0 };
        const cases: Array<[Partial<FindQuery>, string]> = [
          [{}, 'by_creation'],
          [{ filters: [{ field: 'tier', value: 'smb' }] }, 'by_filter'],
          [{ filters: [{ field: 'tier', value: 'smb' }, { field: 'n', value: '4' }] }, 'by_filter'],
          [{ name: 'client 7' }, 'by_name'],
        ];
        for (const [overrides, index] of cases) {
          const explained = await records.find(toMongoFilter({ ...base, ...overrides })).sort(RECORD_SORT).limit(10).explain('queryPlanner');
          const stages = planStages((explained.queryPlanner as Document).winningPlan as Document);
          expect(stages.map((stage) => stage.stage)).not.toContain('COLLSCAN');
          expect(stages.map((stage) => stage.stage)).not.toContain('SORT');
          expect(stages.find((stage) => stage.stage === 'IXSCAN')?.indexName).toBe(index);
        }
        const indexes = (await records.indexes()).map((index) => index.name);
        for (const index of RECORD_INDEXES) expect(indexes).toContain(index.name);
      } finally {
        await store.close();
      }
    });

    it('the projector lease: one holder at a time, taken over after it lapses, released on request', async () => {
      const db = client().db(database());
      // A lease long enough that the next two calls come before it lapses, even on a busy machine.
      const a = await acquireLease(db, 'projector', 'a', 2_000);
      expect(a).toMatchObject({ held: true, lease: { holderId: 'a', token: 1 } });
      expect(await acquireLease(db, 'projector', 'b', 2_000)).toMatchObject({ held: false, holderId: 'a' });
      expect(await acquireLease(db, 'projector', 'a', 2_000)).toMatchObject({ held: true, lease: { token: 1 } });

      // Two candidates racing for a lapsed lease: exactly one wins.
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      const race = await Promise.all([acquireLease(db, 'projector', 'b', 10_000), acquireLease(db, 'projector', 'c', 10_000)]);
      const winners = race.filter((result) => result.held);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ lease: { token: 2 } });

      const holder = winners[0]!.held ? winners[0]!.lease.holderId : '';
      await releaseLease(db, 'projector', 'a'); // not the holder: no effect
      expect(await acquireLease(db, 'projector', 'a', 400)).toMatchObject({ held: false, holderId: holder });
      await releaseLease(db, 'projector', holder);
      expect(await acquireLease(db, 'projector', 'a', 400)).toMatchObject({ held: true });
    });
  });
});

/** Every stage of a winning plan, depth first (MongoDB 7 nests it in `queryPlan` for SBE plans). */
function planStages(plan: Document): Document[] {
  if (plan.queryPlan && typeof plan.queryPlan === 'object') return planStages(plan.queryPlan as Document);
  const stages: Document[] = [plan];
  for (const child of [plan.inputStage, ...(Array.isArray(plan.inputStages) ? plan.inputStages : [])]) {
    if (child && typeof child === 'object') stages.push(...planStages(child as Document));
  }
  return stages;
}

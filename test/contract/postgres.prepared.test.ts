import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { openPostgresEventStore } from '../../src/eventstore/postgres/index.js';
import { formatPosition } from '../../src/eventstore/position.js';
import { openPool, preparedQuery, type Pool } from '../../src/postgres/pool.js';
import { openPostgresReadStore } from '../../src/readstore/postgres/index.js';
import type { RecordDocument } from '../../src/readstore/port.js';
import { describeBackend } from './backends.js';
import { newEvent } from './eventstore.contract.js';
import { postgresBackend, postgresDatabases } from './postgres.js';

/**
 * Reads, and the statements of the log's group commit and of a projector's transaction, as named
 * statements (src/postgres/pool.ts): parsed once per connection, and asked again as plain
 * statements for good once a server connection does not know them, as behind a
 * transaction-pooling proxy that hands each transaction another server connection. A transaction
 * whose named statement is refused wrote nothing and runs again, so nothing is lost or doubled.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL named statements', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('a read is parsed once per connection, and reused', async () => {
    const pool = openPool({ url: await database(), max: 1 });
    try {
      const text = 'SELECT $1::int + 1 AS n';
      expect((await preparedQuery<{ n: number }>(pool, text, [1])).rows).toEqual([{ n: 2 }]);
      expect((await preparedQuery<{ n: number }>(pool, text, [41])).rows).toEqual([{ n: 42 }]);
      const kept = await pool.query<{ count: number }>("SELECT count(*)::int AS count FROM pg_prepared_statements WHERE statement = 'SELECT $1::int + 1 AS n'");
      expect(kept.rows).toEqual([{ count: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it('behind a connection that lost its named statements (a pooling proxy switched it), the read is answered as a plain statement, and so are the later ones', async () => {
    const pool = openPool({ url: await database(), max: 1 });
    try {
      const text = 'SELECT $1::int * 2 AS n';
      expect((await preparedQuery<{ n: number }>(pool, text, [2])).rows).toEqual([{ n: 4 }]);
      // The driver still believes the statement parsed on this connection; the server no longer has it.
      await pool.query('DEALLOCATE ALL');
      expect((await preparedQuery<{ n: number }>(pool, text, [3])).rows).toEqual([{ n: 6 }]);
      expect((await preparedQuery<{ n: number }>(pool, 'SELECT $1::int * 3 AS n', [3])).rows).toEqual([{ n: 9 }]);
      const kept = await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM pg_prepared_statements');
      expect(kept.rows).toEqual([{ count: 0 }]);
    } finally {
      await pool.end();
    }
  });

  /** The named statements the pool's one connection keeps whose text contains `fragment`. */
  const kept = async (pool: Pool, fragment: string) =>
    (await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM pg_prepared_statements WHERE statement LIKE $1', [`%${fragment}%`])).rows[0]!.count;

  it('a group commit names its statement; once the connection lost it, the append is written again as plain statements, once', async () => {
    const pool = openPool({ url: await database(), max: 1 });
    const store = await openPostgresEventStore({ pool });
    try {
      const stream = `record-${randomUUID()}`;
      // given an append, whose statement the connection now keeps by name
      await store.append(stream, [newEvent()], { expectedRevision: 'no_stream' });
      expect(await kept(pool, 'INSERT INTO csr_events')).toBe(1);
      // when the connection loses its named statements, and the next appends come
      await pool.query('DEALLOCATE ALL');
      await store.append(stream, [newEvent()], { expectedRevision: 0 });
      await store.append(stream, [newEvent()], { expectedRevision: 1 });
      // then each was written once, and the pool asks plain statements from then on
      expect((await store.readStream(stream)).map((event) => event.revision)).toEqual([0, 1, 2]);
      expect(await kept(pool, 'INSERT INTO csr_events')).toBe(0);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it("a projector's transaction names its statements; once the connection lost them, the transaction runs again as plain statements", async () => {
    const pool = openPool({ url: await database(), max: 1 });
    const readStore = await openPostgresReadStore({ pool });
    const workspaceId = `ws-${randomUUID()}`;
    const document = (n: number): RecordDocument => ({
      workspaceId, object: 'clients', id: randomUUID(), name: `Client ${n}`, fields: { name: `Client ${n}` }, calculated: {},
      createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString(), updatedAt: new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString(),
      createdPosition: formatPosition(BigInt(n)), revision: 0,
    });
    try {
      // given a transaction that wrote a record, by a named statement
      const first = document(1);
      await readStore.transaction(async (tx) => tx.put(first));
      expect(await kept(pool, 'INSERT INTO csr_records')).toBe(1);
      // when the connection loses it, and the next transaction writes a record and reads it back
      await pool.query('DEALLOCATE ALL');
      const second = document(2);
      const read = await readStore.transaction(async (tx) => {
        await tx.put(second);
        return tx.getMany!(workspaceId, 'clients', [first.id, second.id]);
      });
      // then it was written, once, and read in the same transaction
      expect(read.map((found) => found.id).sort()).toEqual([first.id, second.id].sort());
      const listed = await readStore.find({ workspaceId, object: 'clients', filters: [], limit: 10, offset: 0 });
      expect(listed.documents.map((found) => found.id)).toEqual([first.id, second.id]);
      expect(listed.total).toBe(2);
      expect(await kept(pool, 'INSERT INTO csr_records')).toBe(0);
    } finally {
      await readStore.close();
      await pool.end();
    }
  });
});

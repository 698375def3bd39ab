import { expect, it } from 'vitest';
import { inTransaction, openPool } from '../../src/postgres/pool.js';
import { keepLease, LeaseLost, type LeaseKeeper } from '../../src/postgres/lease.js';
import { describeBackend } from '../contract/backends.js';
import { postgresBackend, postgresDatabases } from '../contract/postgres.js';
import { until } from '../support/until.js';

/** The projector lease on a real PostgreSQL: one holder at a time, taken over when it dies, fenced. */

const backend = await postgresBackend();

describeBackend('PostgreSQL projector lease', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  it('one holder at a time; a dead holder is taken over within 10 s with a higher token, and the late holder is fenced off', async () => {
    const url = await database();
    const [first, second] = [openPool({ url, max: 3 }), openPool({ url, max: 3 })];
    const changes: string[] = [];
    let a: LeaseKeeper | undefined;
    let b: LeaseKeeper | undefined;
    try {
      a = keepLease(first, { name: 'projector', holder: 'a', onChange: (held) => void changes.push(`a:${held}`) });
      await until(() => a!.held, 10_000, 'a takes the free lease');
      b = keepLease(second, { name: 'projector', holder: 'b', onChange: (held) => void changes.push(`b:${held}`) });
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(b.held).toBe(false);
      await inTransaction(first, (client) => a!.fence(client));

      // a's process dies: its renewals stop (its pool is gone).
      const aToken = await second.query<{ token: string }>("SELECT token FROM csr_leases WHERE name = 'projector'");
      await first.end();
      const diedAt = Date.now();
      await until(() => b!.held, 10_000, 'b takes the lease over');
      expect(Date.now() - diedAt).toBeLessThan(10_000);
      const bToken = await second.query<{ token: string }>("SELECT token FROM csr_leases WHERE name = 'projector'");
      expect(BigInt(bToken.rows[0]!.token)).toBe(BigInt(aToken.rows[0]!.token) + 1n);
      await inTransaction(second, (c) => b!.fence(c));
    } finally {
      await b?.stop();
      await a?.stop().catch(() => undefined);
      await second.end();
      await first.end().catch(() => undefined);
    }
    expect(changes[0]).toBe('a:true');
    expect(changes.filter((change) => change === 'b:true')).toHaveLength(1);
  });

  it('fences by the row, not by what the holder believes: a holder whose lease was taken over meanwhile cannot write its checkpoint', async () => {
    const url = await database();
    const pool = openPool({ url, max: 3 });
    try {
      const a = keepLease(pool, { name: 'projector', holder: 'a', ttlMs: 60_000, onChange: () => undefined });
      await until(() => a.held, 10_000, 'a takes the lease');
      await inTransaction(pool, (client) => a.fence(client));
      // Another holder took the lease over (a's renewals are 15 s apart: a has not noticed yet).
      await pool.query("UPDATE csr_leases SET holder = 'b', token = token + 1 WHERE name = 'projector'");
      expect(a.held).toBe(true);
      await expect(inTransaction(pool, (client) => a.fence(client))).rejects.toBeInstanceOf(LeaseLost);
      await a.stop();
    } finally {
      await pool.end();
    }
  });

  it('a holder that stops hands the lease on at once', async () => {
    const url = await database();
    const pool = openPool({ url, max: 3 });
    try {
      const a = keepLease(pool, { name: 'projector', holder: 'a', onChange: () => undefined });
      await until(() => a.held, 10_000, 'a takes the lease');
      const b = keepLease(pool, { name: 'projector', holder: 'b', ttlMs: 60_000, onChange: () => undefined });
      await a.stop();
      // b tries every ttl/4 = 15 s; a's release lets its very next try succeed, not one a minute later.
      await until(() => b.held, 20_000, 'b takes the released lease');
      await b.stop();
    } finally {
      await pool.end();
    }
  });
});

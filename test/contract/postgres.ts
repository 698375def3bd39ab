import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';
import type { Backend } from './backends.js';

/**
 * PostgreSQL for the contract suites and the PostgreSQL end-to-end tests: a real server, never a
 * stand-in. `DATABASE_URL` when set, else the local server every machine of this project runs
 * (postgres://postgres@127.0.0.1:5432/postgres). Unreachable: the suites are registered as skipped
 * with one line ("skipped: no PostgreSQL server ..."); with CSR_REQUIRE_POSTGRES=true (CI) they
 * fail instead, so CI cannot pass without running them.
 *
 * Every suite works in databases of its own (`postgresDatabases`), made fresh and dropped afterwards.
 */

export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export function postgresAdminUrl(): string {
  const fromEnv = process.env.DATABASE_URL?.trim();
  return fromEnv ? fromEnv : DEFAULT_POSTGRES_URL;
}

let probe: Promise<Backend> | null = null;

/** The server for this test file: ready (its admin URL), skipped, or failed (CI requires it). */
export function postgresBackend(): Promise<Backend> {
  probe ??= (async (): Promise<Backend> => {
    const url = postgresAdminUrl();
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return { status: 'ready', url, source: 'env', stop: async () => undefined };
    } catch (error) {
      const why = `no PostgreSQL server at ${redact(url)} (${(error as Error).message})`;
      if (process.env.CSR_REQUIRE_POSTGRES === 'true') return { status: 'failed', reason: `CSR_REQUIRE_POSTGRES=true but ${why}` };
      return { status: 'skipped', reason: `skipped: ${why}; set DATABASE_URL to run the PostgreSQL suites` };
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return probe;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

/** The URL of `database` on the same server as `adminUrl`. */
export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * For a PostgreSQL suite (call inside its describe body): `database()` makes a fresh database and
 * answers its URL; every database made is dropped after the file's suites (connections ended first).
 */
export function postgresDatabases(adminUrl: string): { database(): Promise<string> } {
  const made: string[] = [];
  afterAll(async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      for (const name of made) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  });
  return {
    async database() {
      const name = `csr_test_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      made.push(name);
      return databaseUrl(adminUrl, name);
    },
  };
}

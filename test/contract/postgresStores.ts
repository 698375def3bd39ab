import { openPool, type Pool } from '../../src/postgres/pool.js';

/**
 * For a PostgreSQL contract suite: opens a store on a pool of its own (as each process has one) and
 * ends that pool when the store is closed. The adapters never end the pool they are given, since in
 * the service every adapter of a process shares one (src/backends.ts ends it).
 */
export async function onOwnPool<T extends { close(): Promise<void> }>(url: string, open: (options: { pool: Pool }) => Promise<T>): Promise<T> {
  const pool = openPool({ url, max: 4 });
  try {
    const store = await open({ pool });
    return {
      ...store,
      async close() {
        try {
          await store.close();
        } finally {
          await pool.end();
        }
      },
    };
  } catch (error) {
    await pool.end();
    throw error;
  }
}

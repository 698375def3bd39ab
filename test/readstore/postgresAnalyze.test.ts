import { describe, expect, it } from 'vitest';
import type { Pool } from '../../src/postgres/pool.js';
import { Analyzer } from '../../src/readstore/postgres/analyze.js';

/**
 * When a writer of the PostgreSQL read model analyzes a generation (src/readstore/postgres/analyze.ts):
 * the statements it sends, against a pool that answers the server's statistics and records the rest.
 */

function fakePool(statisticsRows: number): { pool: Pool; sent: string[] } {
  const sent: string[] = [];
  const query = async (sql: string) => {
    if (sql.includes('pg_class')) return { rows: [{ rows: statisticsRows }] };
    sent.push(sql);
    return { rows: [] };
  };
  return { pool: { query } as unknown as Pool, sent };
}

const analyses = (sent: string[]) => sent.filter((sql) => sql.includes('ANALYZE')).length;

describe('the read model analyzer: statistics refreshed once the table has grown, whatever this process found', () => {
  it.each([
    // given the rows the server's statistics count, when this process writes rows in batches of 100, then the analyses after each
    ['no statistics yet (a new generation)', 0, [100, 100, 100, 100, 100, 100], [0, 0, 0, 0, 1, 1]],
    ['a small table', 300, [100, 100, 100, 100, 100, 100], [0, 0, 0, 0, 1, 1]],
    ['a table of 100,000 records (a restarted server)', 100_000, [500, 500, 1_000, 2_000, 4_000], [0, 0, 0, 0, 0]],
    ['a table of 2,000 records', 2_000, [1_000, 1_000, 1_000, 1_000], [0, 1, 1, 2]],
  ] as const)('%s', async (_, rows, batches, expected) => {
    const { pool, sent } = fakePool(rows);
    const analyzer = new Analyzer(pool);
    const seen: number[] = [];
    try {
      for (const batch of batches) {
        analyzer.wrote(1, batch, false);
        await analyzer.settle();
        seen.push(analyses(sent));
      }
    } finally {
      analyzer.close();
    }
    expect(seen).toEqual(expected);
  });
});

import pg from 'pg';
import { expect } from 'vitest';
import type { Pool, PoolClient } from '../../src/postgres/pool.js';

/** For the PostgreSQL suites: what a pool is asked, and how the server plans a batched statement. */

/** From now on, the text of every statement `pool` is asked (its `query`, wrapped). */
export function recordStatements(pool: Pool): string[] {
  const statements: string[] = [];
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as { query: unknown }).query = (...args: unknown[]) => {
    statements.push(String((args[0] as { text?: string }).text ?? args[0]));
    return query(...args);
  };
  return statements;
}

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  'Index Name'?: string;
  'Heap Fetches'?: number;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

export function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

/**
 * A statement of src/postgres/batchedReads.ts, prepared on `client` and run with batches of many
 * lengths (`reads(n)`: the JSON of n reads): the server keeps its generic plan after the five custom
 * ones it tries (a plan that follows the batch's length would be made again at every execution).
 * Answers the plan's nodes for a batch of 50.
 */
export async function expectGenericPlan(client: PoolClient, name: string, sql: string, reads: (n: number) => unknown[]): Promise<PlanNode[]> {
  const literal = (n: number) => pg.escapeLiteral(JSON.stringify(reads(n)));
  await client.query(`PREPARE ${name} (text) AS ${sql}`);
  for (const n of [1, 3, 1, 8, 1, 2, 1, 30, 1, 1, 5, 1]) await client.query(`EXECUTE ${name} (${literal(n)})`);
  const plans = await client.query<{ generic: string; custom: string }>('SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE name = $1', [name]);
  expect(Number(plans.rows[0]!.custom)).toBeLessThanOrEqual(5);
  expect(Number(plans.rows[0]!.generic)).toBeGreaterThanOrEqual(7);
  const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) EXECUTE ${name} (${literal(50)})`);
  return flatten(explained.rows[0]!['QUERY PLAN'][0].Plan);
}

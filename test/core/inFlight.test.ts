import { describe, expect, it } from 'vitest';
import { inFlight } from '../../src/core/inFlight.js';

/** Work whose answers come back in reverse order of the calls, counting how many run at once. */
function tracked() {
  let running = 0;
  let most = 0;
  const work = async (n: number) => {
    running++;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 20 - n));
    running--;
    return n * 10;
  };
  return { work, most: () => most };
}

describe('inFlight', () => {
  it.each([
    { items: [1, 2, 3, 4, 5, 6, 7], limit: 3, results: [10, 20, 30, 40, 50, 60, 70], most: 3 },
    { items: [1, 2], limit: 4, results: [10, 20], most: 2 },
    { items: [5], limit: 1, results: [50], most: 1 },
    { items: [], limit: 4, results: [], most: 0 },
  ])('given $items.length items and a limit of $limit: the results in order, at most $most at once', async ({ items, limit, results, most }) => {
    const run = tracked();
    expect(await inFlight(items, limit, run.work)).toEqual(results);
    expect(run.most()).toBe(most);
  });

  it('rejects with the first failure', async () => {
    await expect(inFlight([1, 2, 3], 2, async (n) => (n === 2 ? Promise.reject(new Error('two')) : n))).rejects.toThrow('two');
  });
});

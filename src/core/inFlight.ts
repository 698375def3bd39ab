/**
 * `work` for every item, at most `limit` at a time, the results in the items' order. For many
 * independent reads of a server store: one after the other, each waits a round trip; all at once,
 * they would take every pooled connection from the requests waiting behind them.
 */
export async function inFlight<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      results[at] = await work(items[at]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

const NOTHING_READY = Symbol('nothing ready');

const turnOfTheLoop = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Groups items that are already available into batches of at most `max`, without waiting for
 * more: under load a consumer commits many events per transaction, when idle it handles each
 * event at once.
 *
 * The event loop turns once between two batches. A consumer's reads, handling and writes may all
 * settle as promise jobs (the embedded stores answer synchronously), so a catch-up from far
 * behind (a fresh read model, a rebuild) would otherwise run to the head in one turn: no timer or
 * message of its thread would run meanwhile, and the pending "nothing ready" immediates below
 * would keep every item read reachable until the end.
 */
export async function* readyBatches<T>(items: AsyncIterable<T>, max: number): AsyncGenerator<T[]> {
  const iterator = items[Symbol.asyncIterator]();
  let next = iterator.next();
  for (;;) {
    const first = await next;
    if (first.done) return;
    const batch = [first.value];
    next = iterator.next();
    while (batch.length < max) {
      const ready = await Promise.race([next, new Promise<typeof NOTHING_READY>((resolve) => setImmediate(resolve, NOTHING_READY))]);
      if (ready === NOTHING_READY || ready.done) break;
      batch.push(ready.value);
      next = iterator.next();
    }
    yield batch;
    await turnOfTheLoop();
  }
}

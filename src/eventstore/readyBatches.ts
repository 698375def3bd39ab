const NOTHING_READY = Symbol('nothing ready');

/**
 * Groups items that are already available into batches of at most `max`, without waiting for
 * more: under load a consumer commits many events per transaction, when idle it handles each
 * event at once.
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
  }
}

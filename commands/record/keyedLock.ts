/**
 * One writer at a time per key within this process. Writers of one record in one process would
 * otherwise all load the same revision, and all but one lose at the commit they share; queued,
 * each decides on the state its predecessor left. Conflicts remain possible only between
 * processes, where the retry of executeRecordCommand handles them.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** `work` learns whether it waited for another writer (then what it loaded before is stale). */
  async run<T>(key: string, work: (waited: boolean) => Promise<T>): Promise<T> {
    const queued = this.tails.get(key);
    const previous = queued ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await work(queued !== undefined);
    } finally {
      release();
      // The last writer in the queue removes it, so the map holds only keys being written.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

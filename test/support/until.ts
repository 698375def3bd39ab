/** Waits until `condition` holds, looking every 5 ms; fails naming `what` after `ms`. */
export async function until(condition: () => boolean, ms: number, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Reads `read()` until `done` holds for what it answers, looking every 25 ms; answers that value.
 * Fails naming `what` and the last value after `ms` (a deadline: on a busy machine a read may be slow).
 */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number, what = 'the value'): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not as expected within ${ms} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

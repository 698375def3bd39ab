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

/** What `beforeTimer` answers when the timer came first. */
export const TIMER_FIRST = Symbol('a timer due first');

/**
 * What `promise` settles with, if it settles before a timer of `ms` started now; else TIMER_FIRST.
 * Timers fire in the order they are due, so work due before this timer (a poll, a deadline) comes
 * first even on a machine that pauses the whole process, where a bound on the elapsed time would
 * fail for the pause alone.
 */
export async function beforeTimer<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMER_FIRST> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMER_FIRST>((resolve) => (timer = setTimeout(() => resolve(TIMER_FIRST), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

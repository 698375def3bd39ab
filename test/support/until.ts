/** Waits until `condition` holds, looking every 5 ms; fails naming `what` after `ms`. */
export async function until(condition: () => boolean, ms: number, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

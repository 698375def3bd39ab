import type { Logger } from 'pino';

/**
 * Keeps one child running: an API process of API_PROCESSES, or a background role's thread. A
 * child that cannot start fails the start (the caller then stops the whole); one that dies after
 * it started is replaced, and so is a replacement that cannot start, again and again. Replacing at
 * once a child that fails at once would spin (a full disk, a file it cannot open), so each
 * replacement waits `restartDelay`: nothing after a long run, longer and longer while children
 * keep dying soon after their start.
 */

export interface Child {
  /** Settles when the child has exited, whatever the reason. */
  exited: Promise<string>;
  /** Asks the child to stop gracefully and waits until it has. */
  stop(): Promise<void>;
}

export interface Stoppable {
  stop(): Promise<void>;
}

export interface Supervised<C extends Child> extends Stoppable {
  first: C;
}

/** A child that ran this long was healthy: its replacement starts at once. */
export const HEALTHY_RUN_MS = 30_000;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 30_000;

/** The wait before the next replacement, given the last one's and how long the child ran. */
export function restartDelay(previousMs: number, ranMs: number): number {
  if (ranMs >= HEALTHY_RUN_MS) return 0;
  return Math.min(MAX_DELAY_MS, Math.max(FIRST_DELAY_MS, previousMs * 2));
}

export async function supervise<C extends Child>(
  name: string,
  spawn: () => Promise<C>,
  logger: Logger,
  delayOf: (previousMs: number, ranMs: number) => number = restartDelay,
): Promise<Supervised<C>> {
  const first = await spawn();
  let current: C | null = first;
  let stopping = false;
  let cancelWait: () => void = () => undefined;

  const keepRunning = async () => {
    let delay = 0;
    let startedAt = Date.now();
    while (current && !stopping) {
      const exit = await current.exited;
      if (stopping) return;
      current = null;
      delay = delayOf(delay, Date.now() - startedAt);
      logger.error({ exit, delayMs: delay }, `${name} died; starting another`);
      while (!current && !stopping) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          cancelWait = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        if (stopping) return;
        try {
          const replacement = await spawn();
          if (stopping) {
            await replacement.stop();
            return;
          }
          current = replacement;
          startedAt = Date.now();
        } catch (error) {
          delay = delayOf(delay, 0);
          logger.error({ err: error, delayMs: delay }, `could not replace ${name}; trying again`);
        }
      }
    }
  };
  const running = keepRunning();

  return {
    first,
    async stop() {
      stopping = true;
      cancelWait();
      await current?.stop();
      await running;
    },
  };
}

import type { MiddlewareHandler } from 'hono';
import { Overloaded } from '../core/errors.js';
import { MAX_BODY_BYTES } from './body.js';
import type { AppEnv } from './types.js';

/**
 * A bound on the request-body bytes the API handles at once. A large body costs memory several
 * times its size (the bytes, the text, the parsed records, the events) and CPU that the event
 * loop owes every other request, so many at once starved reads and grew the process without
 * bound. A body above SMALL_BODY_BYTES takes its size (its Content-Length; the maximum when it
 * is sent chunked) from the budget for as long as its request runs; one that finds the budget
 * spent waits, in arrival order, up to MAX_WAIT_MS, and is otherwise answered 503 with
 * Retry-After without its body being read (the connection closes). Small bodies (almost every
 * request) never wait.
 */

export const SMALL_BODY_BYTES = 64 * 1024;
export const BUDGET_BYTES = 8 * 1024 * 1024;
export const MAX_WAIT_MS = 2_000;
export const RETRY_AFTER_S = 2;

interface Waiter {
  bytes: number;
  grant(): void;
}

export class BodyBudget {
  private used = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly capacity: number,
    private readonly maxWaitMs: number,
  ) {}

  /** Resolves with the release once `bytes` fit (a body larger than the whole budget waits for all of it); null after maxWaitMs. */
  async acquire(bytes: number): Promise<(() => void) | null> {
    const take = Math.min(bytes, this.capacity);
    if (this.waiting.length === 0 && this.used + take <= this.capacity) return this.grant(take);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        bytes: take,
        grant: () => {
          clearTimeout(timer);
          resolve(this.grant(take));
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        resolve(null);
        this.admit(); // a large waiter leaving may let smaller ones behind it in
      }, this.maxWaitMs);
      this.waiting.push(waiter);
    });
  }

  private grant(bytes: number): () => void {
    this.used += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= bytes;
      this.admit();
    };
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.bytes <= this.capacity) this.waiting.shift()!.grant();
  }
}

export function bodyBudget(budget = new BodyBudget(BUDGET_BYTES, MAX_WAIT_MS)): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const announced = c.req.header('Content-Length');
    const bytes = announced === undefined ? MAX_BODY_BYTES : Number(announced);
    if (bytes <= SMALL_BODY_BYTES) return next();
    const release = await budget.acquire(bytes);
    // Closing rather than keeping the connection: Node would otherwise read the whole unread body
    // (up to 5 MiB) only to drop it, for every request refused.
    if (!release) throw new Overloaded(`too many large requests at once; retry in ${RETRY_AFTER_S} seconds`, RETRY_AFTER_S, true);
    try {
      await next();
    } finally {
      release();
    }
  };
}

import type { RateLimit } from '../core/rateLimit.js';

/**
 * The token buckets of API keys' rate limits (docs/sync-clients.md), shared by every API process
 * that uses the same store: one bucket per key, never multiplied by processes. A process takes
 * tokens in batches (src/ratelimit/limiter.ts), so the store sees one call per batch, not per
 * request. An adapter keeps, per key, the tokens left and when they were counted; a take refills
 * by the time passed and grants what it can, in one atomic step (a transaction, or one
 * conditional update on a server store).
 */

export interface Take {
  keyId: string;
  limit: RateLimit;
  /** Grant up to this many tokens... */
  wanted: number;
  /** ...but none unless at least this many are there (the request that asked needs them). */
  atLeast: number;
  /** Requests this process refused since its last take: counted for `csr keys list`. */
  refused: number;
  /** Milliseconds since the epoch (the caller's clock). */
  now: number;
}

export interface Grant {
  granted: number;
  /** Tokens left in the bucket after the grant. */
  left: number;
  /** When granted is 0: milliseconds until `atLeast` tokens are there. */
  retryAfterMs: number;
}

export interface RefusalStats {
  /** Requests refused (429) in the last hour or so (the current and the previous clock hour). */
  recent: number;
  lastAt: string | null;
}

export interface RateLimitStore {
  take(take: Take): Grant | Promise<Grant>;
  refusals(keyIds: string[]): Promise<Map<string, RefusalStats>>;
  close(): Promise<void>;
}

/** The bucket arithmetic every adapter shares: refill by the time passed, then grant. */
export function refill(tokens: number, countedAt: number, limit: RateLimit, now: number): number {
  return Math.min(limit.burst, tokens + (Math.max(0, now - countedAt) / 1000) * limit.perSecond);
}

export function grant(available: number, take: Take): Grant {
  if (available < take.atLeast) return { granted: 0, left: available, retryAfterMs: Math.ceil(((take.atLeast - available) / take.limit.perSecond) * 1000) };
  const granted = Math.max(take.atLeast, Math.min(take.wanted, Math.floor(available)));
  return { granted, left: available - granted, retryAfterMs: 0 };
}

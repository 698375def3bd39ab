import type { RateLimit } from '../core/rateLimit.js';
import { refill, type Grant, type RateLimitStore } from './port.js';

/**
 * One API process's side of the shared buckets: it takes tokens from the store in small batches
 * (about 50 ms of the key's rate, at most a tenth of its burst) and spends them locally, so the
 * store sees one take per batch. What the bucket held at this process's last take, plus what
 * it can have refilled since, bounds what it holds now (other processes only take): a request
 * needing more is refused locally, so a client in a loop costs the store nothing more. Refusals are counted locally and handed to the store with the next take, or within a
 * second. What one process holds unspent is at most one batch: the shared limit is exceeded by
 * at most a batch per process, never multiplied.
 */

export interface Decision {
  allowed: boolean;
  limit: RateLimit;
  /** Tokens this key has left, as far as this process knows. */
  remaining: number;
  /** When refused: whole seconds until a retry can succeed. */
  retryAfterSeconds: number;
}

interface Local {
  limit: RateLimit;
  tokens: number;
  /** The shared bucket's tokens after this process's last take, and when that was. */
  left: number;
  leftAt: number;
  refused: number;
}

const FLUSH_MS = 1_000;

export class RateLimiter {
  private readonly local = new Map<string, Local>();
  private readonly flusher: NodeJS.Timeout;

  constructor(
    private readonly store: RateLimitStore,
    private readonly now: () => number = Date.now,
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    this.flusher = setInterval(() => this.flush(), FLUSH_MS);
    this.flusher.unref();
  }

  /** Spends `cost` tokens of the key's bucket, or refuses; a promise only when the store must be asked and cannot answer at once. */
  admit(keyId: string, limit: RateLimit, cost: number): Decision | Promise<Decision> {
    let local = this.local.get(keyId);
    if (!local || local.limit.text !== limit.text) {
      local = { limit, tokens: 0, left: limit.burst, leftAt: 0, refused: local?.refused ?? 0 };
      this.local.set(keyId, local);
    }
    if (local.tokens >= cost) {
      local.tokens -= cost;
      return { allowed: true, limit, remaining: Math.floor(local.tokens + local.left), retryAfterSeconds: 0 };
    }
    const now = this.now();
    const need = cost - local.tokens;
    const atMost = refill(local.left, local.leftAt, limit, now);
    if (need > atMost) return this.refuse(local, limit, need - atMost);
    const refused = local.refused;
    local.refused = 0;
    const taken = this.store.take({ keyId, limit, wanted: Math.max(need, batchOf(limit)), atLeast: need, refused, now });
    const settle = (grant: Grant): Decision => {
      const entry = local!;
      entry.left = grant.left;
      entry.leftAt = now;
      if (grant.granted === 0) return this.refuse(entry, limit, need - grant.left);
      entry.tokens += grant.granted - cost;
      return { allowed: true, limit, remaining: Math.floor(entry.tokens + entry.left), retryAfterSeconds: 0 };
    };
    return taken instanceof Promise ? taken.then(settle) : settle(taken);
  }

  close(): void {
    clearInterval(this.flusher);
    this.flush();
  }

  /** `missing`: the tokens the bucket lacks; the answer says how long they take to come. */
  private refuse(local: Local, limit: RateLimit, missing: number): Decision {
    local.refused++;
    return { allowed: false, limit, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil(missing / limit.perSecond)) };
  }

  /** Hands the refusals counted here to the store (for `csr keys list`), with a take of nothing. */
  private flush(): void {
    for (const [keyId, local] of this.local) {
      if (local.refused === 0) continue;
      const refused = local.refused;
      local.refused = 0;
      try {
        const taken = this.store.take({ keyId, limit: local.limit, wanted: 0, atLeast: 0, refused, now: this.now() });
        if (taken instanceof Promise) taken.catch(this.onError);
      } catch (error) {
        this.onError(error);
      }
    }
  }
}

/** About 50 ms of the key's rate, at most a tenth of its burst, at least one. */
function batchOf(limit: RateLimit): number {
  return Math.max(1, Math.min(Math.floor(limit.burst / 10), Math.ceil(limit.perSecond / 20)));
}

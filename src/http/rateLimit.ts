import type { Context } from 'hono';
import { TooManyRequests } from '../core/errors.js';
import type { Metrics } from '../core/metrics.js';
import { parseRateLimit, type RateLimit } from '../core/rateLimit.js';
import type { RateLimiter, Decision } from '../ratelimit/limiter.js';
import type { ApiKey } from '../setup/port.js';
import { answerHeader } from './answerHeader.js';
import type { Authenticate } from './auth.js';

/**
 * Rate limits per API key (docs/sync-clients.md): a key's own limit, else RATE_LIMIT_DEFAULT,
 * else none. Checked right after authentication, in the Authenticate both the main app and the
 * one-record route run, so no route escapes it. Answers under a limit carry the IETF httpapi
 * draft's RateLimit-Policy and RateLimit headers; a refusal is 429 with Retry-After.
 */

export interface RateLimits {
  limiter: RateLimiter;
  /** RATE_LIMIT_DEFAULT; null: keys without their own are not limited. */
  defaultLimit: RateLimit | null;
  metrics?: Metrics | undefined;
}

/** The policy's name in the headers: one policy, the key's bucket. */
const POLICY = '"key"';

export interface RateLimitCheck {
  /** Spends `cost` more tokens of the caller's key (a write of many records: one per record past the first). */
  charge(c: Context, cost: number): void | Promise<void>;
}

export function rateLimitCheck({ limiter, defaultLimit, metrics }: RateLimits): RateLimitCheck {
  const own = new WeakMap<ApiKey, RateLimit | null>();
  const limitOf = (key: ApiKey): RateLimit | null => {
    if (key.rateLimit === undefined) return defaultLimit;
    let limit = own.get(key);
    if (limit === undefined) {
      // Stored only as `csr` parsed it; one that no longer parses limits nothing rather than failing every request.
      try {
        limit = parseRateLimit(key.rateLimit);
      } catch {
        limit = defaultLimit;
      }
      own.set(key, limit);
    }
    return limit;
  };
  const answer = (c: Context, workspaceId: string, decision: Decision): void => {
    const { limit } = decision;
    answerHeader(c, 'RateLimit-Policy', `${POLICY};q=${limit.burst};w=${Math.max(1, Math.ceil(limit.burst / limit.perSecond))}`);
    const refill = decision.allowed ? Math.ceil((limit.burst - decision.remaining) / limit.perSecond) : decision.retryAfterSeconds;
    answerHeader(c, 'RateLimit', `${POLICY};r=${decision.remaining};t=${Math.max(0, refill)}`);
    if (decision.allowed) return;
    metrics?.rateLimited(workspaceId);
    throw new TooManyRequests(`this API key's rate limit (${limit.text}) is used up; retry after ${decision.retryAfterSeconds} s`, decision.retryAfterSeconds);
  };
  return {
    charge(c, cost) {
      const caller = c.get('caller');
      const limit = caller ? limitOf(caller.key) : null;
      if (limit === null || cost < 1) return;
      const decision = limiter.admit(caller.key.id, limit, cost);
      return decision instanceof Promise ? decision.then((settled) => answer(c, caller.workspaceId, settled)) : answer(c, caller.workspaceId, decision);
    },
  };
}

/** Authentication, then one token of the caller's key; a promise only when one of them must wait. */
export function rateLimited(authenticate: Authenticate, check: RateLimitCheck): Authenticate {
  return (c) => {
    const waiting = authenticate(c);
    return waiting ? waiting.then(() => check.charge(c, 1)) : check.charge(c, 1);
  };
}

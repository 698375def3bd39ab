import { createHash } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { RequestInProgress, ValidationFailed } from '../core/errors.js';
import type { IdempotencyStore, IdempotentRequest } from '../idempotency/port.js';
import { readBodyText } from './body.js';
import type { AppEnv } from './types.js';

/**
 * Idempotency-Key on POST, PATCH and DELETE (PRODUCT.md "Idempotency"). The first request with a
 * key runs and its answer is kept 24 hours; a repeat with the same method, path and body gets that
 * answer again (with `Idempotent-Replayed: true`) and changes nothing; another request with the
 * key is a 422. Answers of 5xx are not kept: the key is freed, so that the client's retry runs.
 * A repeat that comes while the first still runs is a 409 (retry it a moment later).
 *
 * The answer belongs to the API key that made it: the key's id is part of the fingerprint, so
 * another key of the workspace (one without access to the object) gets a 422, never the answer
 * of a change it may not make; a read-only key writes nothing, so its request goes straight to
 * the route's 403.
 */

export const RETAIN_MS = 24 * 3600_000;
/** Longer than any request may take (its projection wait is 10 s): a holder that died frees its key after this. */
export const LEASE_MS = 60_000;
const KEY = /^[\x20-\x7e]{1,255}$/;

export function idempotency(store: IdempotencyStore, clock: () => Date): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const key = c.req.header('Idempotency-Key');
    if (key === undefined) return next();
    const caller = c.get('caller');
    if (caller.key.access === 'read-only') return next();
    if (!KEY.test(key)) throw new ValidationFailed('Idempotency-Key must be 1 to 255 printable ASCII characters');
    const body = await readBodyText(c);
    const url = new URL(c.req.url);
    const fingerprint = createHash('sha256').update(`${caller.key.id}\n${c.req.method}\n${url.pathname}${url.search}\n`).update(body).digest('hex');
    const request: IdempotentRequest = { workspaceId: caller.workspaceId, key, fingerprint };

    const claim = await store.claim(request, { now: clock(), retainMs: RETAIN_MS, leaseMs: LEASE_MS });
    switch (claim.kind) {
      case 'mismatch':
        throw new ValidationFailed('this Idempotency-Key was already used for another request (API key, method, path or body); use a new key');
      case 'running':
        throw new RequestInProgress('a request with this Idempotency-Key is still running; retry in a moment');
      case 'replay':
        c.header('Idempotent-Replayed', 'true');
        return c.body(claim.answer.body, claim.answer.status as ContentfulStatusCode, { 'Content-Type': 'application/json' });
      case 'run':
        break;
    }
    try {
      await next();
    } catch (error) {
      await store.release(request).catch(() => undefined);
      throw error;
    }
    const res = c.res;
    try {
      if (res.status >= 500) await store.release(request);
      else await store.complete(request, { status: res.status, body: await res.clone().text() });
    } catch (error) {
      // The change is made and answered; only a repeat of it will run again.
      c.get('log').logger.warn({ err: error }, 'could not keep the answer of an Idempotency-Key');
    }
  };
}



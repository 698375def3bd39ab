import type { MiddlewareHandler } from 'hono';
import { Forbidden, Unauthorized } from '../core/errors.js';
import { fingerprint } from '../setup/apiKeys.js';
import type { ApiKey, SetupStore } from '../setup/port.js';
import type { RequestLog } from './requestLog.js';

/**
 * Bearer authentication (spec 5): the key's SHA-256 fingerprint is looked up on every request,
 * so a revocation takes effect on the very next one (a store may remember keys only while it can
 * tell that nothing changed, as the SQLite one does). lastUsedAt is written at most every
 * TOUCH_INTERVAL_MS per key, to keep a disk write off the hot path of every request.
 */

export interface Caller {
  key: ApiKey;
  workspaceId: string;
  canAccess(object: string): boolean;
  /** Throws Forbidden unless the key may write this object. */
  assertCanWrite(object: string): void;
  assertCanRead(object: string): void;
}

const TOUCH_INTERVAL_MS = 5_000;
const BEARER = /^Bearer[ ]+([\x21-\x7e]{1,512})\s*$/i;

export function bearerAuth(setup: SetupStore, clock: () => Date): MiddlewareHandler {
  const lastTouched = new Map<string, number>();
  return async (c, next) => {
    const match = BEARER.exec(c.req.header('Authorization') ?? '');
    if (!match) throw new Unauthorized('missing API key: send the header Authorization: Bearer <API_KEY>');
    const key = await setup.keyByFingerprint(fingerprint(match[1]!));
    if (!key || key.revokedAt !== null) throw new Unauthorized('invalid or revoked API key');

    const now = clock();
    if (now.getTime() - (lastTouched.get(key.id) ?? 0) >= TOUCH_INTERVAL_MS) {
      lastTouched.set(key.id, now.getTime());
      setup.touchKey(key.id, now.toISOString()).catch((error: unknown) => {
        (c.get('log') as RequestLog).logger.warn({ err: error, keyId: key.id }, 'could not record key use');
      });
    }
    c.set('caller', callerFor(key));
    (c.get('log') as RequestLog).bind({ workspace: key.workspaceId, keyId: key.id });
    await next();
  };
}

export function callerFor(key: ApiKey): Caller {
  const canAccess = (object: string) => key.objects === 'all' || key.objects.includes(object);
  return {
    key,
    workspaceId: key.workspaceId,
    canAccess,
    assertCanRead(object) {
      if (!canAccess(object)) throw new Forbidden(`this API key has no access to ${object}`);
    },
    assertCanWrite(object) {
      if (!canAccess(object)) throw new Forbidden(`this API key has no access to ${object}`);
      if (key.access === 'read-only') throw new Forbidden('this API key is read only');
    },
  };
}

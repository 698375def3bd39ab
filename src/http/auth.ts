import type { Context, MiddlewareHandler } from 'hono';
import { Forbidden, Unauthorized } from '../core/errors.js';
import { fingerprint } from '../setup/apiKeys.js';
import type { ApiKey, SetupStore } from '../setup/port.js';
import type { RequestLog } from './requestLog.js';

/**
 * Bearer authentication (spec 5): the key's SHA-256 fingerprint is looked up on every request,
 * so a revocation takes effect on the very next one (a store may remember keys only while it can
 * tell that nothing changed, as the SQLite one does). lastUsedAt is written at most every
 * TOUCH_INTERVAL_MS per key, to keep a disk write off the hot path of every request.
 *
 * What never changes is remembered: the fingerprint of an Authorization header that named a key
 * (a pure function of the header: remembering it cannot outlive a revocation, which the store
 * lookup still sees), and the Caller of a key as the store returned it (a store hands out a new
 * ApiKey object once the key changed).
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
/** Headers remembered at most; more keys in use only mean more hashing. */
const REMEMBERED_HEADERS = 1_000;

/** Sets the request's caller, or throws; a promise only when the store cannot answer at once. */
export type Authenticate = (c: Context) => void | Promise<void>;

export function bearerAuth(authenticate: Authenticate): MiddlewareHandler {
  // Not an async function: when the store answers at once, the request goes on to the handler
  // without waiting for a turn of the microtask queue (and without a promise of its own).
  return (c, next) => {
    const waiting = authenticate(c);
    return waiting ? waiting.then(next) : next();
  };
}

export function bearerAuthentication(setup: SetupStore, clock: () => Date): Authenticate {
  const lastTouched = new Map<string, number>();
  // Only headers that named a key: guessed keys cannot push the real ones out.
  const fingerprints = new Map<string, string>();
  const known = new WeakMap<ApiKey, { caller: Caller; fields: Record<string, unknown> }>();

  const admit = (c: Context, header: string, print: string, key: ApiKey | null): void => {
    if (!key || key.revokedAt !== null) throw new Unauthorized('invalid or revoked API key');
    if (!fingerprints.has(header)) {
      if (fingerprints.size >= REMEMBERED_HEADERS) fingerprints.clear();
      fingerprints.set(header, print);
    }

    const now = clock().getTime();
    if (now - (lastTouched.get(key.id) ?? 0) >= TOUCH_INTERVAL_MS) {
      lastTouched.set(key.id, now);
      setup.touchKey(key.id, new Date(now).toISOString()).catch((error: unknown) => {
        (c.get('log') as RequestLog).logger.warn({ err: error, keyId: key.id }, 'could not record key use');
      });
    }
    let entry = known.get(key);
    if (!entry) known.set(key, (entry = { caller: callerFor(key), fields: { workspace: key.workspaceId, keyId: key.id } }));
    c.set('caller', entry.caller);
    (c.get('log') as RequestLog).bind(entry.fields);
  };

  return (c) => {
    const header = c.req.header('Authorization') ?? '';
    let print = fingerprints.get(header);
    if (print === undefined) {
      const match = BEARER.exec(header);
      if (!match) throw new Unauthorized('missing API key: send the header Authorization: Bearer <API_KEY>');
      print = fingerprint(match[1]!);
    }
    const key = setup.keyByFingerprintNow(print);
    if (key !== undefined) return admit(c, header, print, key);
    const looked = print;
    return setup.keyByFingerprint(looked).then((found) => admit(c, header, looked, found));
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

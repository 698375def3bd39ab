import { Unavailable } from '../core/errors.js';

/**
 * A PostgreSQL server that cannot be reached, is shutting down or restarting: not a fault of the
 * request but a moment to wait, which the API answers with 503 (retry) rather than 500. The pool
 * makes new connections by itself once the server is back.
 */

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300']);

export function isUnreachable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (UNREACHABLE_CODES.has(code) || code.startsWith('08')) return true;
  return typeof e?.message === 'string' && /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down)/i.test(e.message);
}

export function unreachable(): Unavailable {
  return new Unavailable('the database cannot be reached right now; retry shortly');
}

/** The store with every method's unreachable-server failure turned into Unavailable; everything else as it was. */
export function mappingUnreachable<T extends object>(store: T): T {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(isUnreachable(error) ? unreachable() : error)) : result;
      };
    },
  });
}

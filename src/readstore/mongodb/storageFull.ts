import { InsufficientStorage } from '../../core/errors.js';

/**
 * MongoDB's ways of saying its disk is full, for every MongoDB adapter (read store, setup,
 * webhooks, idempotency keys): they become InsufficientStorage, which the API answers with 507.
 * The server error OutOfDiskSpace (code 14031), the "new file allocation failure" of the older
 * storage engine (12520), and a message naming the cause (WiredTiger's ENOSPC, Atlas's space
 * quota), on the error itself, on one of its write errors, on its write concern error, or on
 * the server's response it carries.
 */

const FULL_CODES = new Set([14031, 12520]);
const FULL_NAMES = new Set(['OutOfDiskSpace']);
const FULL_TEXT = /no space left on device|ENOSPC|disk is full|out of disk space|insufficient free space|over your space quota/i;

interface ErrorLike {
  code?: unknown;
  codeName?: unknown;
  message?: unknown;
  errmsg?: unknown;
  writeErrors?: unknown;
  writeConcernError?: unknown;
  errorResponse?: unknown;
  cause?: unknown;
}

export function isMongoStorageFull(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 3) return false;
  const e = error as ErrorLike;
  // A duplicate key (11000) is about the data, whatever its message quotes.
  if (e.code === 11000) return false;
  if (typeof e.code === 'number' && FULL_CODES.has(e.code)) return true;
  if (typeof e.codeName === 'string' && FULL_NAMES.has(e.codeName)) return true;
  if ([e.message, e.errmsg].some((text) => typeof text === 'string' && FULL_TEXT.test(text))) return true;
  const nested = [e.writeConcernError, e.errorResponse, e.cause, ...(Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors])];
  return nested.some((inner) => isMongoStorageFull(inner, depth + 1));
}

export function asMongoStorageError(error: unknown): unknown {
  return isMongoStorageFull(error) ? new InsufficientStorage() : error;
}

/**
 * The store with every method's failure passed through asMongoStorageError. Methods that answer
 * without a promise (subscriptions, iterators) are left as they are.
 */
export function mappingStorageErrors<T extends object>(store: T): T {
  const mapped = { ...store } as Record<string, unknown>;
  for (const [name, value] of Object.entries(store)) {
    if (typeof value !== 'function') continue;
    mapped[name] = (...args: unknown[]) => {
      const result = (value as (...a: unknown[]) => unknown).apply(store, args);
      return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(asMongoStorageError(error))) : result;
    };
  }
  return mapped as T;
}

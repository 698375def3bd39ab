import { InsufficientStorage } from '../core/errors.js';

/**
 * PostgreSQL's way of saying its disk is full: SQLSTATE 53100 (disk_full), raised when a write
 * cannot extend a table, an index or the WAL. Every PostgreSQL adapter turns it into
 * InsufficientStorage, which the API answers with 507; the transaction was rolled back, so nothing
 * was written.
 */
export function isPostgresDiskFull(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (e?.code === '53100') return true;
  return typeof e?.message === 'string' && /could not extend file.*No space left on device/i.test(e.message);
}

export function asPostgresStorageError(error: unknown): unknown {
  return isPostgresDiskFull(error) ? new InsufficientStorage() : error;
}

/**
 * The store with every method's failure passed through asPostgresStorageError. Methods that answer
 * without a promise (subscriptions, iterators) are left as they are.
 */
export function mappingPostgresErrors<T extends object>(store: T): T {
  const mapped = { ...store } as Record<string, unknown>;
  for (const [name, value] of Object.entries(store)) {
    if (typeof value !== 'function') continue;
    mapped[name] = (...args: unknown[]) => {
      const result = (value as (...a: unknown[]) => unknown).apply(store, args);
      return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(asPostgresStorageError(error))) : result;
    };
  }
  return mapped as T;
}

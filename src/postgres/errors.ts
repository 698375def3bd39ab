import { InsufficientStorage, ValidationFailed } from '../core/errors.js';

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

/**
 * PostgreSQL's text cannot hold the character U+0000 (SQLSTATE 22021 for text, 22P05 for the
 * escape in JSON); the API and Setup take any text. Where an adapter does not store such text
 * another way (the read store escapes it), the value is refused as bad input, never a 500.
 */
export function isPostgresNulText(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (e?.code === '22021') return typeof e.message === 'string' && e.message.includes('0x00');
  // In a UTF-8 database the only character JSON's escapes can name that text cannot hold.
  return e?.code === '22P05';
}

export const NUL_TEXT_MESSAGE = 'text must not contain the character U+0000';

export function asPostgresStorageError(error: unknown): unknown {
  if (isPostgresDiskFull(error)) return new InsufficientStorage();
  if (isPostgresNulText(error)) return new ValidationFailed(NUL_TEXT_MESSAGE);
  return error;
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

import { InsufficientStorage, Unavailable } from '../../core/errors.js';

/**
 * What a PostgreSQL failure means to a caller of the event store: a full disk (SQLSTATE 53100) is
 * InsufficientStorage, which the API answers with 507, as the embedded store's SQLITE_FULL; a
 * server that cannot be reached, is shutting down or restarting is Unavailable (503: retry), not
 * a fault of the request. In both cases the transaction was rolled back (or, for a connection lost
 * during COMMIT, its outcome is unknown to us, and the caller was never told it succeeded).
 */

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300']);

export function isDiskFull(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (e?.code === '53100') return true;
  return typeof e?.message === 'string' && /could not extend file.*No space left on device/i.test(e.message);
}

export function isUnreachable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (UNREACHABLE_CODES.has(code) || code.startsWith('08')) return true;
  return typeof e?.message === 'string' && /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(e.message);
}

export function asStoreError(error: unknown): unknown {
  if (isDiskFull(error)) return new InsufficientStorage();
  if (isUnreachable(error)) return new Unavailable('the database cannot be reached right now; retry shortly');
  return error;
}

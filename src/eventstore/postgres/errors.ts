import { InsufficientStorage } from '../../core/errors.js';
import { isPostgresDiskFull } from '../../postgres/errors.js';
import { isUnreachable, unreachable } from '../../postgres/unreachable.js';

/**
 * What a PostgreSQL failure means to a caller of the event store: a full disk (src/postgres/errors.ts,
 * the one check every PostgreSQL adapter uses) is InsufficientStorage, which the API answers with
 * 507, as the embedded store's SQLITE_FULL; a server that cannot be reached, is shutting down or
 * restarting is Unavailable (503: retry), not a fault of the request. In both cases the transaction
 * was rolled back (or, for a connection lost during COMMIT, its outcome is unknown to us, and the
 * caller was never told it succeeded).
 */
export function asStoreError(error: unknown): unknown {
  if (isPostgresDiskFull(error)) return new InsufficientStorage();
  if (isUnreachable(error)) return unreachable();
  return error;
}

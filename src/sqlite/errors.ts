import { InsufficientStorage } from '../core/errors.js';

/**
 * SQLite's way of saying the disk is full: SQLITE_FULL, or an I/O error whose cause was ENOSPC
 * (SQLite reports a failed write() as SQLITE_IOERR_WRITE and the like). Every embedded adapter
 * turns these into InsufficientStorage, which the API answers with 507.
 */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return true;
  if (typeof code !== 'string') return false;
  if (code === 'SQLITE_FULL') return true;
  return code.startsWith('SQLITE_IOERR') && /ENOSPC|no space|disk is full|quota/i.test((error as Error).message ?? '');
}

export function asStorageError(error: unknown): unknown {
  return isDiskFull(error) ? new InsufficientStorage() : error;
}

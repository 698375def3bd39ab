import { MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { InsufficientStorage } from '../../src/core/errors.js';
import { asMongoStorageError, isMongoStorageFull, mappingStorageErrors } from '../../src/readstore/mongodb/storageFull.js';

/**
 * Issue 22 item 7 on MongoDB: the server's out-of-space errors become InsufficientStorage (507)
 * in every MongoDB adapter, as SQLite's do in the embedded ones. Pure mapping: no server needed.
 */

const server = (fields: Record<string, unknown>) => new MongoServerError({ message: String(fields['errmsg'] ?? 'error'), ...fields });

describe('MongoDB disk-full errors', () => {
  // Given an error as the driver throws it, when it is classified, then only a full disk is one.
  const table: [string, unknown, boolean][] = [
    ['OutOfDiskSpace (14031)', server({ code: 14031, codeName: 'OutOfDiskSpace', errmsg: 'Cannot write: free disk space is 1024 bytes' }), true],
    ['the code name alone', { codeName: 'OutOfDiskSpace', message: 'x' }, true],
    ['the older engine\'s "new file allocation failure" (12520)', { code: 12520, errmsg: 'new file allocation failure' }, true],
    ['WiredTiger\'s ENOSPC in the message', server({ code: 1, errmsg: 'WT_ERROR: No space left on device' }), true],
    ['Atlas\'s space quota', server({ code: 8000, codeName: 'AtlasError', errmsg: 'you are over your space quota, using 513 MB of 512 MB' }), true],
    ['a bulk write whose write error is out of space', { message: 'bulk failed', writeErrors: [{ index: 0, code: 14031, errmsg: 'out of disk space' }] }, true],
    ['a single write error object', { message: 'write failed', writeErrors: { index: 0, code: 14031 } }, true],
    ['a write concern error', { message: 'write concern', writeConcernError: { code: 14031, codeName: 'OutOfDiskSpace' } }, true],
    ['the server response carried by the error', { message: 'failed', errorResponse: { ok: 0, code: 14031, codeName: 'OutOfDiskSpace' } }, true],
    ['the cause of a wrapping error', new Error('transaction failed', { cause: server({ code: 14031, codeName: 'OutOfDiskSpace' }) }), true],
    ['a duplicate key, whatever its value says', server({ code: 11000, errmsg: 'E11000 duplicate key: { name: "disk is full" }' }), false],
    ['a write conflict', server({ code: 112, codeName: 'WriteConflict', errmsg: 'WriteConflict' }), false],
    ['a network error', Object.assign(new Error('connection 3 to 127.0.0.1:27017 closed'), { name: 'MongoNetworkError' }), false],
    ['not an object', 'No space left on device', false],
  ];
  it.each(table)('%s', (_given, error, full) => {
    expect(isMongoStorageFull(error)).toBe(full);
    if (full) expect(asMongoStorageError(error)).toBeInstanceOf(InsufficientStorage);
    else expect(asMongoStorageError(error)).toBe(error);
  });

  it("a store's methods fail with InsufficientStorage for a full disk, with other errors as they were, and answer as before otherwise", async () => {
    const other = new Error('other');
    const store = {
      name: 'store',
      full: async () => Promise.reject(server({ code: 14031, codeName: 'OutOfDiskSpace' })),
      other: async () => Promise.reject(other),
      fine: async (n: number) => n + 1,
      sync: () => 'not a promise',
      self() {
        return this.name;
      },
    };
    const mapped = mappingStorageErrors(store);
    await expect(mapped.full()).rejects.toBeInstanceOf(InsufficientStorage);
    await expect(mapped.other()).rejects.toBe(other);
    await expect(mapped.fine(1)).resolves.toBe(2);
    expect(mapped.sync()).toBe('not a promise');
    expect(mapped.self()).toBe('store');
    expect(mapped.name).toBe('store');
  });
});

import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The better-sqlite3 this Node.js can run; both have the same JavaScript API.
 *
 * - 12.x wraps its objects in `node::ObjectWrap`. On Node 24.19 and later, a statement that is
 *   garbage-collected after its thread's environment is gone aborts the whole process
 *   (`Assertion failed: (env) != nullptr`, nodejs/node#65446). Our test suite hit it in 2 of
 *   41 files on Node 24.21.
 * - 13.x is built on Node-API 10, which Node 20 lacks: there it crashes on the first query.
 *
 * So Node-API 10 (Node 22.14 and later, 24) gets 13.x, and Node 20 (and 22 before 22.14) gets
 * 12.x, installed as the optional dependency `better-sqlite3-node20` (it compiles from source where
 * no prebuilt binary can be downloaded). 13.x is an optional dependency too: its engines say
 * Node >= 22, and npm skips an optional package whose engines do not match, where it would install
 * a required one with an EBADENGINE warning.
 */

export type SqliteDriver = typeof BetterSqlite3;

const NODE_API_OF_13 = 10;

/** Loads the driver for a Node.js with this Node-API version; `load` is `require`. */
export function loadSqliteDriver(nodeApi: number, load: (name: string) => unknown): SqliteDriver {
  if (nodeApi >= NODE_API_OF_13) {
    try {
      return load('better-sqlite3') as SqliteDriver;
    } catch (error) {
      throw new Error(
        `Node.js ${process.version} needs better-sqlite3 13, an optional dependency npm skips on Node 20, ` +
          'and it could not be loaded: run `npm install` again with this Node.js',
        { cause: error },
      );
    }
  }
  try {
    return load('better-sqlite3-node20') as SqliteDriver;
  } catch (error) {
    throw new Error(
      `Node.js ${process.version} needs better-sqlite3 12, installed as the optional dependency better-sqlite3-node20, ` +
        'and it could not be loaded: run `npm install` where python3, make and a C++ compiler exist, or use Node.js 22.14 or later',
      { cause: error },
    );
  }
}

export const Sqlite: SqliteDriver = loadSqliteDriver(Number(process.versions.napi), createRequire(import.meta.url));

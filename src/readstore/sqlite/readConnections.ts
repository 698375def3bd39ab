import type Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import { fileSignal, type FileSignal } from '../../sqlite/fileSignal.js';
import { openConnection } from './connection.js';

/**
 * The read side of an embedded read-store file: two read-only connections, and which one a read
 * takes.
 *
 * SQLite discards a connection's whole page cache when its next read transaction finds that
 * another connection has committed, and a connection that maps its file (`mmap_size`) unmaps
 * all of it too, so that each page it touches again is faulted back in. Under a steady flow of
 * writes (a projector committing every few milliseconds) nearly every read starts after a
 * commit: the map's teardown and faults cost more than reading the few pages through the cache
 * would. So reads take a connection without a map while commits are being heard, and the mapped
 * one once the file has been still for `STILL_MS` (a read-mostly server, where the map spares a
 * store larger than the page cache a copy of every page it reads; docs/performance.md).
 *
 * Commits are heard through the file's checkpoint signal, which every projection transaction of
 * this process's threads (and its cluster's) rings. A writer it does not reach (the `csr` tool)
 * only means the mapped connection starts over, as it would without this choice.
 */

/** How long the file must have been still before reads go back to the mapped connection. */
export const STILL_MS = 100;

export class ReadConnections<R> {
  private readonly mappedReader: { db: Database.Database; reader: R };
  private unmappedReader: { db: Database.Database; reader: R } | null = null;
  private readonly commits: FileSignal;
  /** When a commit was last heard (the clock's ms). */
  private heardAt = 0;
  /** Whether commits were heard within STILL_MS at the last look: a read of a still file asks no clock. */
  private moving = false;

  constructor(
    private readonly path: string,
    private readonly readerOn: (db: Database.Database) => R,
    private readonly now: () => number = () => performance.now(),
  ) {
    const db = openConnection(path, { readonly: true, mapped: true });
    this.mappedReader = { db, reader: readerOn(db) };
    this.commits = fileSignal('checkpoint', path, () => this.heard());
  }

  /** A commit to the file: a projection transaction of any thread of this process, this one's included. */
  private heard(): void {
    this.heardAt = this.now();
    this.moving = true;
  }

  /** The reader a read should take now. */
  current(): R {
    if (this.moving && this.now() - this.heardAt >= STILL_MS) this.moving = false;
    return this.moving ? this.unmapped().reader : this.mappedReader.reader;
  }

  close(): void {
    this.commits.close();
    this.mappedReader.db.close();
    this.unmappedReader?.db.close();
  }

  /** Opened at the first read under writes: a server that is only read never opens it. */
  private unmapped(): { db: Database.Database; reader: R } {
    if (!this.unmappedReader) {
      const db = openConnection(this.path, { readonly: true, mapped: false });
      this.unmappedReader = { db, reader: this.readerOn(db) };
    }
    return this.unmappedReader;
  }
}

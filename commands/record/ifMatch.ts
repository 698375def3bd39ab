import { PreconditionFailed } from '../../src/core/errors.js';
import type { LoadedRecord } from './repository.js';

/**
 * Conditional writes (If-Match, docs/sync-clients.md): a record's ETag is its stream revision, a
 * strong validator `"<revision>"`. Checked on the state each attempt loads, inside the retry of a
 * concurrency conflict, so a change landing between the check and the append is a 412, never
 * overwritten.
 */

/** `*`: any existing record; else the revisions the client has seen. */
export type IfMatch = '*' | ReadonlySet<number>;

export function etagOf(revision: number): string {
  return `"${revision}"`;
}

/** Throws PreconditionFailed when the live record is not at a revision `ifMatch` names (a missing record is left to the command's own 404). */
export function assertIfMatch(ifMatch: IfMatch | undefined, loaded: LoadedRecord): void {
  const problem = ifMatchProblem(ifMatch, loaded);
  if (problem) throw problem;
}

export function ifMatchProblem(ifMatch: IfMatch | undefined, loaded: LoadedRecord): PreconditionFailed | null {
  if (ifMatch === undefined || ifMatch === '*' || loaded.state.status !== 'live' || typeof loaded.expectedRevision !== 'number') return null;
  if (ifMatch.has(loaded.expectedRevision)) return null;
  const etag = etagOf(loaded.expectedRevision);
  return new PreconditionFailed(`the record has changed since the version you sent in If-Match: its current ETag is ${etag}; read it again`, etag);
}

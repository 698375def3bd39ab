import type { Context } from 'hono';
import { ValidationFailed } from '../core/errors.js';
import type { IfMatch } from '../../commands/record/ifMatch.js';

/**
 * Conditional requests (RFC 9110 section 13, docs/sync-clients.md): a record's ETag is its
 * revision, strong, `"<revision>"`. If-Match compares strongly (a weak `W/"3"` never matches);
 * If-None-Match weakly.
 */

const ENTITY_TAG = /^\s*(W\/)?"(\d{1,15})"\s*$/;

/** The If-Match of a write, or undefined when none was sent; 422 for one that names no ETag of ours. */
export function ifMatchOf(c: Context): IfMatch | undefined {
  const header = c.req.header('If-Match');
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  const revisions = new Set<number>();
  for (const item of header.split(',')) {
    const tag = ENTITY_TAG.exec(item);
    if (!tag) throw new ValidationFailed(`If-Match must list ETags as GET answers them, e.g. If-Match: "3" (or *); got ${JSON.stringify(header.slice(0, 100))}`);
    if (!tag[1]) revisions.add(Number(tag[2]));
  }
  return revisions;
}

/** Whether If-None-Match names this ETag (or is `*`): then a GET answers 304. Anything unparsable matches nothing. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((item) => {
    const tag = ENTITY_TAG.exec(item);
    return tag !== null && `"${tag[2]}"` === etag;
  });
}

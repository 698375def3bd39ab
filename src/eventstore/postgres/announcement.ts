import type { EventFilter } from '../port.js';

/**
 * What one append transaction wrote, as its NOTIFY tells it: the head before it (`from`), the head
 * it committed (`to`), and the kinds of the streams it wrote (each name up to its first '-', or the
 * whole name). A filtered follower whose cursor stands at `from` or later and whose filter can match
 * none of the kinds learns from it that nothing up to `to` is for it, and moves its cursor there
 * without a read. The catalogue watcher of every thread (the workspace streams only) read the log
 * after each create for nothing otherwise.
 *
 * The payload is `to:from:["kind",...]`; a bare `to` (a replay of parked events: no seq at all)
 * tells only that something changed, and so does a payload too long to carry the kinds.
 */
export interface Announcement {
  from: number;
  to: number;
  kinds: string[];
}

/** Kinds above this many (or a payload above MAX_PAYLOAD) are left out: the followers then read. */
const MAX_KINDS = 32;
const MAX_PAYLOAD = 2_000;

export function kindOf(stream: string): string {
  const dash = stream.indexOf('-');
  return dash < 0 ? stream : stream.slice(0, dash + 1);
}

export function announcementPayload(announcement: Announcement): string {
  const bare = String(announcement.to);
  if (announcement.kinds.length > MAX_KINDS) return bare;
  const payload = `${bare}:${announcement.from}:${JSON.stringify(announcement.kinds)}`;
  return payload.length > MAX_PAYLOAD ? bare : payload;
}

/** The announcement a payload carries; null when it carries none (a bare seq, or anything else). */
export function parseAnnouncement(payload: string | undefined): Announcement | null {
  const match = payload === undefined ? null : /^([0-9]+):([0-9]+):(\[.*\])$/s.exec(payload);
  if (!match) return null;
  try {
    const kinds = JSON.parse(match[3]!) as unknown;
    if (!Array.isArray(kinds) || !kinds.every((kind) => typeof kind === 'string')) return null;
    return { to: Number(match[1]), from: Number(match[2]), kinds };
  } catch {
    return null;
  }
}

/** The seq a payload leads with (its `to`), if any. */
export function payloadSeq(payload: string | undefined): number | null {
  const match = payload === undefined ? null : /^([0-9]+)(?::|$)/.exec(payload);
  return match ? Number(match[1]) : null;
}

/**
 * Whether a stream of `kind` can start with one of the filter's prefixes: a stream is its kind and
 * then anything, so it can when either of kind and prefix starts with the other.
 */
export function mayMatch(filter: EventFilter, kinds: readonly string[]): boolean {
  return kinds.some((kind) => filter.streamPrefixes.some((prefix) => prefix.startsWith(kind) || kind.startsWith(prefix)));
}

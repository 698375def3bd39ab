import { chainHash, chainHashOfJson, chainHashOfText, GENESIS, hashOf, storedDataOf, withoutHash, type ChainScope } from './chain.js';
import type { ChainBreak, ChainReport, RecordedEvent } from './port.js';
import type { Position } from './position.js';

export type { ChainBreak, ChainReport };

/**
 * Re-checks the audit hash chain (chain.ts) over events fed in log order. Pure: verification and
 * the contract suites use it. The first break is kept; later events are only counted.
 */

/** An event as a store keeps it, data and metadata as their stored JSON text (see addStoredText). */
export interface StoredText {
  id: string;
  stream: string;
  revision: number;
  type: string;
  /** Commit time in milliseconds. */
  created: number;
  data: string;
  metadata: string;
}

/** The stored metadata's end (chain.ts, storedMetadataJson): `,"hash":"<64 hex>"}`, or `{"hash":"<64 hex>"}` alone. */
const HASH_TAIL = 75;
const HASH_MEMBER = ',"hash":"';

export class ChainCheck {
  /** Events written before the chain began (no hash, none chained before them). */
  unchained = 0;
  chained = 0;
  firstBreak: ChainBreak | null = null;
  /** The hash of the last chained event (the head an auditor keeps); GENESIS before any. */
  head = GENESIS;
  /** Log scope: one chain along the whole log. */
  private readonly log = { previous: GENESIS, started: false };
  /** Stream scope: per stream, [previous hash, chain started]. */
  private readonly streams = new Map<string, { previous: string; started: boolean }>();

  constructor(private readonly scope: ChainScope) {}

  add(event: RecordedEvent): void {
    if (this.firstBreak) {
      this.chained += hashOf(event.metadata) === null ? 0 : 1;
      return;
    }
    const state = this.scope === 'log' ? this.log : this.streamState(event.stream);
    const hash = hashOf(event.metadata);
    if (hash === null) {
      if (state.started) return this.broken(event, 'the event carries no hash, but events before it do');
      this.unchained += 1;
      state.previous = GENESIS;
      return;
    }
    const content = {
      id: event.id,
      stream: event.stream,
      revision: event.revision,
      type: event.type,
      ...(this.scope === 'log' ? { created: event.created.getTime() } : {}),
    };
    const metadata = withoutHash(event.metadata);
    const data = storedDataOf(event);
    // Fast path: an event stored as canonical JSON (chain.ts) serialises back to it with plain
    // JSON.stringify; a match proves the content (SHA-256). Otherwise (older events, another
    // store, integer-like keys, an edit) the canonical form decides.
    const matches =
      chainHashOfJson(state.previous, { ...content, data: JSON.stringify(data), metadata: JSON.stringify(metadata) }) === hash ||
      chainHash(state.previous, { ...content, data, metadata }) === hash;
    if (!matches) {
      return this.broken(event, 'its hash does not match its content and the hash before it (edited, removed or reordered)');
    }
    state.started = true;
    state.previous = hash;
    this.chained += 1;
    this.head = hash;
  }

  /**
   * The fast path for a store that keeps the very text it hashed (the embedded one): true when the
   * stored text itself hashes to the hash it carries after the previous one, which proves the event
   * as `add` would, without parsing it. False changes nothing: the caller checks the event with
   * `add` (an event stored in another form by an older release, an edit, a break already found).
   */
  addStoredText(event: StoredText): boolean {
    if (this.firstBreak) return false;
    const stored = event.metadata;
    if (stored.length < HASH_TAIL || stored.charCodeAt(stored.length - 1) !== 125 /* } */ || stored.charCodeAt(stored.length - 2) !== 34 /* " */) return false;
    const hash = stored.slice(-66, -2);
    let metadata: string;
    if (stored.startsWith(HASH_MEMBER, stored.length - HASH_TAIL)) metadata = `${stored.slice(0, -HASH_TAIL)}}`;
    else if (stored.length === HASH_TAIL && stored.startsWith('{"hash":"')) metadata = '{}';
    else return false;
    const state = this.scope === 'log' ? this.log : this.streamState(event.stream);
    const created = this.scope === 'log' ? event.created : undefined;
    // A digest is 64 hex digits: equal to the text between the quotes, it is what parsing gives too.
    if (chainHashOfText(state.previous, event.id, event.stream, event.revision, event.type, created, event.data, metadata) !== hash) return false;
    state.started = true;
    state.previous = hash;
    this.chained += 1;
    this.head = hash;
    return true;
  }

  /** The counts so far, as `EventStore.checkChain` answers them. */
  report(events: number): ChainReport {
    return { events, chained: this.chained, unchained: this.unchained, head: this.head, firstBreak: this.firstBreak };
  }

  private streamState(stream: string): { previous: string; started: boolean } {
    let state = this.streams.get(stream);
    if (!state) this.streams.set(stream, (state = { previous: GENESIS, started: false }));
    return state;
  }

  private broken(event: RecordedEvent, reason: string): void {
    this.firstBreak = { position: event.position, eventId: event.id, stream: event.stream, reason };
  }
}

/**
 * `checkChain` for a store that gives its events parsed (EventStoreDB): the log read a page at a
 * time up to `until`, each event through ChainCheck.add.
 */
export async function checkChainByPages(
  scope: ChainScope,
  readAll: (from: Position | 'start') => Promise<RecordedEvent[]>,
  until: Position | null,
  progress?: (events: number) => void,
): Promise<ChainReport> {
  const check = new ChainCheck(scope);
  let count = 0;
  for (let from: Position | 'start' = 'start'; until !== null; ) {
    const page = await readAll(from);
    for (const event of page) {
      if (event.position > until) return check.report(count);
      check.add(event);
      count += 1;
    }
    if (page.length === 0) break;
    from = page.at(-1)!.position;
    progress?.(count);
  }
  return check.report(count);
}

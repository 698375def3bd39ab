import type { EventStore } from '../../src/eventstore/port.js';
import type { RecordState } from './decider.js';

/**
 * Recently loaded record states, each at the revision it was folded to. A cached state is never
 * trusted on its own: loading reads the stream from the next revision on (an indexed read of
 * what came since, usually nothing), so what another writer or process appended is folded in and
 * a write costs the same whatever the length of the record's history. An event store's streams
 * only grow, so a state at revision N stays true for revision N.
 */

export interface CachedRecord {
  state: RecordState;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

const MAX_ENTRIES = 10_000;

/** Least recently used first (a Map keeps insertion order). */
class RecordStateCache {
  private readonly entries = new Map<string, CachedRecord>();

  get(recordId: string): CachedRecord | undefined {
    const entry = this.entries.get(recordId);
    if (entry) {
      this.entries.delete(recordId);
      this.entries.set(recordId, entry);
    }
    return entry;
  }

  set(recordId: string, entry: CachedRecord): void {
    const known = this.entries.get(recordId);
    if (known && known.revision >= entry.revision) return;
    this.entries.delete(recordId);
    this.entries.set(recordId, entry);
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
  }
}

// One cache per event store (per log), so that two stores in one process (tests, tools) never
// share a state; held weakly, it goes with its store.
const caches = new WeakMap<EventStore, RecordStateCache>();

export function stateCacheOf(events: EventStore): RecordStateCache {
  let cache = caches.get(events);
  if (!cache) {
    cache = new RecordStateCache();
    caches.set(events, cache);
  }
  return cache;
}

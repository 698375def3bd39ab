import { newId } from '../../src/core/ids.js';
import { Conflict } from '../../src/core/errors.js';
import type { EventMetadata, EventStore, ExpectedRevision, StreamAppend } from '../../src/eventstore/port.js';
import type { Position } from '../../src/eventstore/position.js';
import { decide, evolve, initialState, type RecordCommand, type RecordState } from './decider.js';
import { recordStream, upcast, type RecordEvent } from '../../src/events/records.js';
import { stateCacheOf } from './stateCache.js';

/** Loads a record's state by folding its stream, and runs commands against it. */

export interface LoadedRecord {
  state: RecordState;
  expectedRevision: ExpectedRevision;
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** Folds only what the stream holds after the cached state of the record (see stateCache.ts). */
export async function loadRecord(events: EventStore, recordId: string): Promise<LoadedRecord> {
  const cache = stateCacheOf(events);
  const cached = cache.get(recordId);
  const recorded = await events.readStream(recordStream(recordId), cached ? { fromRevision: cached.revision + 1 } : {});
  let state: RecordState = cached?.state ?? initialState;
  for (const event of recorded) {
    const recordEvent = upcast(event);
    if (recordEvent) state = evolve(state, recordEvent);
  }
  const last = recorded.at(-1);
  const createdAt = cached?.createdAt ?? recorded[0]?.created ?? null;
  const updatedAt = last?.created ?? cached?.updatedAt ?? null;
  const revision = last?.revision ?? cached?.revision;
  if (revision === undefined || !createdAt || !updatedAt) return { state, expectedRevision: 'no_stream', createdAt: null, updatedAt: null };
  if (last) cache.set(recordId, { state, revision, createdAt, updatedAt });
  return { state, expectedRevision: revision, createdAt, updatedAt };
}

/** The append that records decided events on the record's own stream. */
export function recordAppend(recordId: string, decided: RecordEvent[], metadata: EventMetadata, expectedRevision: ExpectedRevision): StreamAppend {
  return {
    stream: recordStream(recordId),
    events: decided.map((event) => ({ id: newId(), type: event.type, data: { ...event.data }, metadata })),
    expectedRevision,
  };
}

/** A conflicting append means someone else changed the record meanwhile: decide again on fresh state. */
const MAX_ATTEMPTS = 5;

/**
 * load -> decide -> append, retried as a whole on a concurrency conflict. `command` may depend on
 * the loaded record (e.g. a delete snapshots it). Resolves with the position of the appended events,
 * or null when the decision produced none (nothing changed).
 */
export async function executeRecordCommand(
  events: EventStore,
  recordId: string,
  command: (loaded: LoadedRecord) => RecordCommand | Promise<RecordCommand>,
  metadata: EventMetadata,
  preloaded?: LoadedRecord,
): Promise<Position | null> {
  let loaded = preloaded;
  for (let attempt = 1; ; attempt++) {
    loaded ??= await loadRecord(events, recordId);
    const decided = decide(await command(loaded), loaded.state);
    if (decided.length === 0) return null;
    try {
      const append = recordAppend(recordId, decided, metadata, loaded.expectedRevision);
      const result = await events.append(append.stream, append.events, { expectedRevision: append.expectedRevision });
      return result.position;
    } catch (error) {
      if (!(error instanceof Conflict) || attempt === MAX_ATTEMPTS) throw error;
      loaded = undefined;
    }
  }
}

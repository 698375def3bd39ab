import { newId } from '../../src/core/ids.js';
import { Conflict } from '../../src/core/errors.js';
import type { EventMetadata, EventStore, ExpectedRevision, StreamAppend } from '../../src/eventstore/port.js';
import type { Position } from '../../src/eventstore/position.js';
import { decide, evolve, initialState, type RecordCommand, type RecordState } from './decider.js';
import { recordStream, upcast, type RecordEvent } from '../../src/events/records.js';
import { stateCacheOf } from './stateCache.js';
import { KeyedLock } from './keyedLock.js';
import type { ObjectDef } from '../../src/schema/types.js';
import { PENDING, reservationChanges } from '../reservations/changes.js';

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

/**
 * A conflicting append means someone else changed the record meanwhile: decide again on fresh
 * state. Bounded, with a random pause ("full jitter") so that writers that met once spread out
 * instead of meeting again at the next commit.
 */
export const MAX_ATTEMPTS = 10;

export function retryPause(attempt: number): Promise<void> {
  const ceiling = Math.min(100, 2 ** (attempt + 1));
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
}

/**
 * load -> decide -> append, retried as a whole on a concurrency conflict. `command` may depend on
 * the loaded record (e.g. a delete snapshots it). Resolves with the position of the appended events,
 * or null when the decision produced none (nothing changed).
 */
const writers = new KeyedLock();

export function executeRecordCommand(
  events: EventStore,
  /** The object written, as the workspace's catalogue has it (its unique fields and record name). */
  object: ObjectDef,
  recordId: string,
  command: (loaded: LoadedRecord) => RecordCommand | Promise<RecordCommand>,
  metadata: EventMetadata,
  preloaded?: LoadedRecord,
): Promise<Position | null> {
  return writers.run(recordId, (waited) => attemptCommand(events, object, recordId, command, metadata, waited ? undefined : preloaded));
}

async function attemptCommand(
  events: EventStore,
  object: ObjectDef,
  recordId: string,
  command: (loaded: LoadedRecord) => RecordCommand | Promise<RecordCommand>,
  metadata: EventMetadata,
  preloaded: LoadedRecord | undefined,
): Promise<Position | null> {
  let loaded = preloaded;
  for (let attempt = 1; ; attempt++) {
    loaded ??= await loadRecord(events, recordId);
    const decided = decide(await command(loaded), loaded.state);
    if (decided.length === 0) return null;
    try {
      return await appendDecided(events, object, recordId, loaded, decided, metadata);
    } catch (error) {
      if (!(error instanceof Conflict) || attempt === MAX_ATTEMPTS) throw error;
      loaded = undefined;
      await retryPause(attempt);
    }
  }
}

/** The record's events, with the reservations it gains before them and the releases of those it loses after. */
async function appendDecided(events: EventStore, written: ObjectDef, recordId: string, loaded: LoadedRecord, decided: RecordEvent[], metadata: EventMetadata): Promise<Position> {
  const append = recordAppend(recordId, decided, metadata, loaded.expectedRevision);
  const { state } = loaded;
  const object = state.status === 'live' && state.object === written.key ? written : undefined;
  if (state.status !== 'live' || !object) return (await events.append(append.stream, append.events, { expectedRevision: append.expectedRevision })).position;
  const scope = { events, workspaceId: state.workspaceId, object, loadState: async (id: string) => (await loadRecord(events, id)).state };
  const changes = await reservationChanges(scope, state, decided, recordId, metadata);
  if (changes === PENDING) throw new Conflict('reservation', 'free', 'pending'); // another create holds it for a moment: decide again
  if (changes.claims.length === 0 && changes.releases.length === 0) {
    return (await events.append(append.stream, append.events, { expectedRevision: append.expectedRevision })).position;
  }
  // A release that fails (someone took the value over meanwhile) changes nothing that matters.
  return (await events.appendThen([...changes.claims, append], changes.releases)).first.position;
}

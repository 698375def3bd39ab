import type { EventMetadata, EventStore, StreamAppend } from '../../src/eventstore/port.js';
import { newId } from '../../src/core/ids.js';
import type { ObjectDef } from '../../src/schema/types.js';
import type { RecordState } from '../record/decider.js';
import { reservationStream, type ReservationKey } from './keys.js';
import { recordStream } from '../../src/events/records.js';
import { claimEvents, judge, needsHolderChange, reservationState, type HolderChange, type Judgement, type ReleaseReason, type ReservationEvent } from './reservation.js';

/** Reads reservation streams and builds their appends; the decisions are in reservation.ts. */

export interface ReservationScope {
  events: EventStore;
  workspaceId: string;
  object: ObjectDef;
  /** The state of a holder's record (passed in: the record repository uses this module). */
  loadState(recordId: string): Promise<RecordState>;
}

/** Who holds `key`, as seen by a writer of record `self`: the stream's last event and its holder's record. */
export async function judgeKey(scope: ReservationScope, key: ReservationKey, self: string): Promise<Judgement> {
  const [last] = await scope.events.readStream(reservationStream(scope.workspaceId, scope.object.key, key), { direction: 'backwards', maxCount: 1 });
  const state = reservationState(last);
  const holder = state.holder !== null && state.holder !== self ? await scope.loadState(state.holder) : null;
  const now = new Date();
  let holderChange: HolderChange | null | undefined;
  if (state.holder !== null && needsHolderChange(state, holder, scope.object, key, now)) {
    const [last] = await scope.events.readStream(recordStream(state.holder), { direction: 'backwards', maxCount: 1 });
    holderChange = last ? { created: last.created, actionId: last.metadata.actionId } : null;
  }
  return judge(state, holder, scope.object, scope.workspaceId, key, self, now, holderChange);
}

export function claimAppend(
  scope: ReservationScope,
  key: ReservationKey,
  judgement: Extract<Judgement, { kind: 'free' | 'stale' }>,
  recordId: string,
  metadata: EventMetadata,
): StreamAppend {
  const data = { schemaVersion: 1 as const, workspaceId: scope.workspaceId, object: scope.object.key, key, recordId };
  return toAppend(reservationStream(scope.workspaceId, scope.object.key, key), claimEvents(judgement, data), judgement.expectedRevision, metadata);
}

/** Releases of the keys `recordId` holds (a key someone else holds is left alone). */
export async function releaseAppends(
  scope: ReservationScope,
  keys: ReservationKey[],
  recordId: string,
  reason: ReleaseReason,
  metadata: EventMetadata,
): Promise<StreamAppend[]> {
  const appends: StreamAppend[] = [];
  for (const key of keys) {
    const stream = reservationStream(scope.workspaceId, scope.object.key, key);
    const [last] = await scope.events.readStream(stream, { direction: 'backwards', maxCount: 1 });
    const state = reservationState(last);
    if (state.holder !== recordId) continue;
    const data = { schemaVersion: 1 as const, workspaceId: scope.workspaceId, object: scope.object.key, key, recordId, reason };
    appends.push(toAppend(stream, [{ type: 'ValueReleased', data }], state.expectedRevision, metadata));
  }
  return appends;
}

function toAppend(stream: string, events: ReservationEvent[], expectedRevision: StreamAppend['expectedRevision'], metadata: EventMetadata): StreamAppend {
  return { stream, events: events.map((event) => ({ id: newId(), type: event.type, data: { ...event.data }, metadata })), expectedRevision };
}

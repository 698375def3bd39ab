import type { ExpectedRevision, RecordedEvent } from '../../src/eventstore/port.js';
import type { ObjectDef } from '../../src/schema/types.js';
import type { RecordState } from '../record/decider.js';
import { recordHasKey, type ReservationKey } from './keys.js';

/**
 * A reservation stream as pure functions. Its last event says who holds the key value:
 * `ValueReserved` (held by its recordId) or `ValueReleased` (free again). A claim appends with the
 * stream's revision as expected revision, so of concurrent claimants exactly one wins; the others
 * get a Conflict, read the stream again and find the winner.
 */

export interface ReservationData {
  schemaVersion: 1;
  workspaceId: string;
  object: string;
  key: ReservationKey;
  recordId: string;
}

export type ReservationEvent =
  | { type: 'ValueReserved'; data: ReservationData }
  | { type: 'ValueReleased'; data: ReservationData & { reason: ReleaseReason } };

/** renamed/deleted: by its holder; stale: by a claimant that found the holder no longer has the value; abandoned: by a create that failed. */
export type ReleaseReason = 'renamed' | 'deleted' | 'stale' | 'abandoned';

export interface ReservationState {
  expectedRevision: ExpectedRevision;
  holder: string | null;
  /** Commit time of the claim, to tell a create still under way from one that never came. */
  since: Date | null;
  /** The action that wrote the claim (and, with it or right after it, the holder's change). */
  actionId: string | null;
}

export const FREE: ReservationState = { expectedRevision: 'no_stream', holder: null, since: null, actionId: null };

/** The state after the stream's last event (only the last one matters). */
export function reservationState(last: RecordedEvent | undefined): ReservationState {
  if (!last) return FREE;
  const holder = last.type === 'ValueReserved' ? String(last.data['recordId']) : null;
  return { expectedRevision: last.revision, holder, since: holder ? last.created : null, actionId: holder ? (last.metadata?.actionId ?? null) : null };
}

/** The holder record's last change, as its stream's last event says. */
export interface HolderChange {
  created: Date;
  actionId: string | null;
}

function young(state: ReservationState, now: Date): boolean {
  return state.since !== null && now.getTime() - state.since.getTime() < CREATE_GRACE_MS;
}

/**
 * A live holder without the value whose claim is young: either its change is still on the way
 * (EventStoreDB writes the claim, then the record's change), or it dropped the value later. Only
 * the holder's last change tells them apart, so only then is it read (judgeKey).
 */
export function needsHolderChange(state: ReservationState, holder: RecordState | null, object: ObjectDef, key: ReservationKey, now: Date): boolean {
  return holder?.status === 'live' && !recordHasKey(object, key, holder.fields) && young(state, now);
}

/**
 * Whether the change the claim protects has reached the holder's record: the holder's last change
 * is the claim's own action, or was committed after the claim. One committed before it means the
 * change is still on the way.
 */
function changeLanded(state: ReservationState, last: HolderChange | null): boolean {
  if (last === null || state.since === null) return false;
  return (state.actionId !== null && last.actionId === state.actionId) || last.created.getTime() > state.since.getTime();
}

/**
 * How long a claim whose record does not exist yet counts as a create under way. The record is
 * appended right after its claim (in the same commit on the embedded store); a claim older than
 * this lost its process between the two appends, and may be taken over.
 */
export const CREATE_GRACE_MS = 30_000;

export type Judgement =
  | { kind: 'free'; expectedRevision: ExpectedRevision }
  | { kind: 'stale'; expectedRevision: ExpectedRevision; holder: string }
  | { kind: 'mine' }
  | { kind: 'held'; holder: string }
  | { kind: 'pending'; holder: string };

/**
 * Who holds `key` for a writer of record `self`: the holder counts only while it is a live record
 * of this workspace and object that still has the value.
 */
export function judge(
  state: ReservationState,
  holder: RecordState | null,
  object: ObjectDef,
  workspaceId: string,
  key: ReservationKey,
  self: string,
  now: Date,
  /** The holder's last change; read only when needsHolderChange (undefined: not read). */
  holderChange?: HolderChange | null,
): Judgement {
  if (state.holder === null) return { kind: 'free', expectedRevision: state.expectedRevision };
  if (state.holder === self) return { kind: 'mine' };
  if (holder === null || holder.status === 'absent') {
    return young(state, now) ? { kind: 'pending', holder: state.holder } : { kind: 'stale', expectedRevision: state.expectedRevision, holder: state.holder };
  }
  const ours = holder.status === 'live' && holder.workspaceId === workspaceId && holder.object === object.key;
  if (ours && recordHasKey(object, key, holder.fields)) return { kind: 'held', holder: state.holder };
  // A holder's change that gains the value (a rename to it) follows its claim on EventStoreDB:
  // until it lands, the holder is pending, as a create under way is.
  if (ours && holderChange !== undefined && needsHolderChange(state, holder, object, key, now) && !changeLanded(state, holderChange)) {
    return { kind: 'pending', holder: state.holder };
  }
  return { kind: 'stale', expectedRevision: state.expectedRevision, holder: state.holder };
}

/** The events of a claim: a stale holder is released first, in the same append. */
export function claimEvents(judgement: Extract<Judgement, { kind: 'free' | 'stale' }>, data: ReservationData): ReservationEvent[] {
  const reserved: ReservationEvent = { type: 'ValueReserved', data };
  if (judgement.kind === 'free') return [reserved];
  return [{ type: 'ValueReleased', data: { ...data, recordId: judgement.holder, reason: 'stale' } }, reserved];
}

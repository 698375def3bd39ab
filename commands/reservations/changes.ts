import { ValidationFailed } from '../../src/core/errors.js';
import type { EventMetadata, StreamAppend } from '../../src/eventstore/port.js';
import type { Values } from '../../src/readstore/port.js';
import { evolve, type RecordState } from '../record/decider.js';
import type { RecordEvent } from '../../src/events/records.js';
import { heldKeys, isUniqueKey, sameKey, type ReservationKey } from './keys.js';
import { claimAppend, judgeKey, releaseAppends, type ReservationScope } from './store.js';

/**
 * What a decided change of an existing record does to its reservations: it claims the keys it
 * gains (a unique value held by another record fails the change with 422; a name held by another
 * is simply not held) and releases the keys it loses (rename, delete). A change that touches no
 * key reads nothing.
 */

export interface ReservationChanges {
  claims: StreamAppend[];
  releases: StreamAppend[];
}

/** A claim of another record's create still under way: decide again in a moment. */
export const PENDING = 'pending';

export async function reservationChanges(
  scope: ReservationScope,
  before: Extract<RecordState, { status: 'live' }>,
  decided: RecordEvent[],
  recordId: string,
  metadata: EventMetadata,
): Promise<ReservationChanges | typeof PENDING> {
  const after = decided.reduce(evolve, before as RecordState);
  const old = heldKeys(scope.object, before.fields);
  const now = after.status === 'live' ? heldKeys(scope.object, after.fields) : [];
  const gained = now.filter((key) => !old.some((other) => sameKey(key, other)));
  const lost = old.filter((key) => !now.some((other) => sameKey(key, other)));
  const changes: ReservationChanges = { claims: [], releases: [] };
  if (gained.length === 0 && lost.length === 0) return changes;

  for (const key of gained) {
    const judgement = await judgeKey(scope, key, recordId);
    if (judgement.kind === 'free' || judgement.kind === 'stale') changes.claims.push(claimAppend(scope, key, judgement, recordId, metadata));
    else if (judgement.kind !== 'mine' && isUniqueKey(scope.object, key)) {
      if (judgement.kind === 'pending') return PENDING;
      throw takenError(scope.object.key, key, (after as { fields: Values }).fields, judgement.holder);
    }
  }
  changes.releases = await releaseAppends(scope, lost, recordId, after.status === 'live' ? 'renamed' : 'deleted', metadata);
  return changes;
}

/** PRODUCT.md, "Auto numbers": the 422 names the field, the value and the holder's id. */
export function takenError(object: string, key: ReservationKey, fields: Values, holder: string): ValidationFailed {
  const field = key.fields[0]!;
  return new ValidationFailed(`${field}: '${String(fields[field])}' is already taken by ${object} record ${holder}`);
}

import { Conflict } from '../src/core/errors.js';
import type { AppendGroup, AppendResult, EventMetadata, StreamAppend } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import type { Values } from '../src/readstore/port.js';
import type { ObjectDef } from '../src/schema/types.js';
import type { AssignedNumber, NumberedField } from './autoNumbers.js';
import type { CommandDeps } from './deps.js';
import { decide, initialState } from './record/decider.js';
import type { RecordEvent } from '../src/events/records.js';
import { loadRecord, MAX_ATTEMPTS, recordAppend, retryPause } from './record/repository.js';
import { takenError } from './reservations/changes.js';
import { heldKeys, isUniqueKey, sameKey, type ReservationKey } from './reservations/keys.js';
import type { Judgement } from './reservations/reservation.js';
import { claimAppend, judgeKey, releaseAppends, type ReservationScope } from './reservations/store.js';

/**
 * A create decided by an upsert, made safe against concurrent creates of the same record: its
 * match key and unique values are claimed in their reservation streams together with (or, when
 * it takes an auto number, just before) the record's own append. When another record holds the
 * match key, the upsert updates that record instead; when it holds a unique value, this record
 * fails with 422. See docs/concurrency.md.
 */

export interface CreateRequest {
  workspaceId: string;
  object: ObjectDef;
  recordId: string;
  /** The record's values; an assigned auto number is added here. */
  values: Values;
  /** What the upsert matched on (null: it creates without matching). */
  matchKey: ReservationKey | null;
  /** Set when the record takes the object's auto number. */
  numbered: NumberedField | null;
  /** Written in the record's group, after it: all or none with it on the embedded store. */
  also?: StreamAppend[];
}

export type CreateOutcome = { kind: 'created'; position: Position } | { kind: 'matched'; holder: string };

type Role = 'match' | 'unique' | 'name';

/** What reading a key's stream that does not exist judges (reservation.ts: FREE). */
const NEVER_CLAIMED: Judgement = { kind: 'free', expectedRevision: 'no_stream' };

/** How long a create waits for the record of a claim that another create holds. */
const PENDING_PATIENCE_MS = 5_000;

export async function createRecord(deps: CommandDeps, request: CreateRequest, metadata: EventMetadata, numbersMetadata: EventMetadata): Promise<CreateOutcome> {
  const { workspaceId, object, recordId, values } = request;
  const scope: ReservationScope = { events: deps.events, workspaceId, object, loadState: async (id) => (await loadRecord(deps.events, id)).state };
  // Decided once up front: the rules fail the record before anything is claimed.
  const decided = decide({ type: 'CreateRecord', workspaceId, object: object.key, recordId, fields: values }, initialState);
  const keys = keysToClaim(object, values, request.matchKey);

  const patience = Date.now() + PENDING_PATIENCE_MS;
  // A create's keys are new values nearly always (the upsert found no record with them): the first
  // attempt claims them as never claimed, without reading their streams. The expected revision
  // makes that safe: a stream that exists fails the claim with a Conflict, and the next attempt
  // reads and judges every key as it would have.
  let presume = true;
  for (let attempt = 1; ; attempt++) {
    const claims: StreamAppend[] = [];
    let pending = false;
    for (const { key, role } of keys) {
      const judgement = presume ? NEVER_CLAIMED : await judgeKey(scope, key, recordId);
      if (judgement.kind === 'free' || judgement.kind === 'stale') claims.push(claimAppend(scope, key, judgement, recordId, metadata));
      else if (judgement.kind === 'held' && role === 'match') return { kind: 'matched', holder: judgement.holder };
      else if (judgement.kind === 'held' && role === 'unique') throw takenError(object.key, key, values, judgement.holder);
      else if (judgement.kind === 'pending' && role !== 'name') pending = true;
    }
    if (pending && Date.now() < patience) {
      // The holder's create is under way (its claim is written, its record not yet): wait for it, not counting an attempt.
      attempt--;
      await retryPause(2);
      continue;
    }
    try {
      if (pending) throw new Conflict('reservation', 'free', 'pending');
      const position = request.numbered
        ? await appendNumbered(deps, scope, request, decided, claims, metadata, numbersMetadata)
        : await appendWithClaims(deps, claims, recordAppend(recordId, decided, metadata, 'no_stream'), request.also ?? []);
      return { kind: 'created', position };
    } catch (error) {
      const presumed = presume;
      presume = false;
      if (presumed && error instanceof Conflict && claims.some((claim) => claim.stream === error.stream)) {
        // A presumed claim met a stream that exists: not a lost race, so no attempt and no pause.
        attempt--;
        continue;
      }
      if (!(error instanceof Conflict) || attempt === MAX_ATTEMPTS) throw error;
      await retryPause(attempt);
    }
  }
}

/** The match key decides between create and update; unique values must be free; the name is held when free. */
function keysToClaim(object: ObjectDef, values: Values, matchKey: ReservationKey | null): { key: ReservationKey; role: Role }[] {
  const keys: { key: ReservationKey; role: Role }[] = matchKey ? [{ key: matchKey, role: 'match' }] : [];
  for (const key of heldKeys(object, values)) {
    if (matchKey && sameKey(key, matchKey)) continue;
    keys.push({ key, role: isUniqueKey(object, key) ? 'unique' : 'name' });
  }
  return keys;
}

async function appendWithClaims(deps: CommandDeps, claims: StreamAppend[], record: StreamAppend, also: StreamAppend[]): Promise<Position> {
  if (claims.length === 0 && also.length === 0) return (await deps.events.append(record.stream, record.events, { expectedRevision: record.expectedRevision })).position;
  return (await deps.events.appendThen([...claims, record, ...also], [])).first.position;
}

/**
 * A create that loses its match key must not have taken a number (numbers stay gap-free): its
 * claims are written with the number's reservation in one group where the store writes groups all
 * or none (one commit), else on their own first. Then the number, its value's claim and the record
 * in one group.
 */
async function appendNumbered(
  deps: CommandDeps,
  scope: ReservationScope,
  request: CreateRequest,
  decided: RecordEvent[],
  claims: StreamAppend[],
  metadata: EventMetadata,
  numbersMetadata: EventMetadata,
): Promise<Position> {
  const numbered = request.numbered!;
  const together = deps.events.atomicGroups;
  if (claims.length > 0 && !together) await deps.events.appendThen(claims, []);
  let outcome: PromiseSettledResult<AppendResult>;
  let value: string | undefined;
  try {
    // The values take the number once its record is written: a create that loses its match key
    // meanwhile updates the holder with its values, which must not carry a number.
    const use = ([assigned]: AssignedNumber[]): AppendGroup[] => {
      value = assigned!.value;
      const withNumber = decided.map((event) => numberedEvent(event, numbered.field, assigned!.value));
      return [[assigned!.claim(request.recordId), recordAppend(request.recordId, withNumber, metadata, 'no_stream'), ...(request.also ?? [])]];
    };
    const outcomes = await deps.autoNumbers.reserveAndAppend(request.workspaceId, numbered, 1, numbersMetadata, use, together ? claims : []);
    outcome = outcomes[0]!;
  } catch (error) {
    outcome = { status: 'rejected', reason: error };
  }
  if (outcome!.status === 'fulfilled') {
    request.values[numbered.field] = value!;
    return outcome!.value.position;
  }
  // A Conflict: someone set the assigned value by hand meanwhile (the next attempt skips it and
  // finds these claims its own), or, written together, a claim was taken (then nothing was written).
  // Any other failure gives the claims back.
  if (!(outcome!.reason instanceof Conflict) && claims.length > 0) {
    await releaseOwn(deps, scope, request, value === undefined ? request.values : { ...request.values, [numbered.field]: value }, metadata);
  }
  throw outcome!.reason;
}

function numberedEvent(event: RecordEvent, field: string, value: string): RecordEvent {
  if (event.type !== 'RecordCreated') return event;
  return { type: 'RecordCreated', data: { ...event.data, fields: { ...event.data.fields, [field]: value } } };
}

async function releaseOwn(deps: CommandDeps, scope: ReservationScope, request: CreateRequest, values: Values, metadata: EventMetadata): Promise<void> {
  const keys = [...(request.matchKey ? [request.matchKey] : []), ...heldKeys(request.object, values)];
  try {
    const releases = await releaseAppends(scope, keys, request.recordId, 'abandoned', metadata);
    await Promise.allSettled(releases.map((release) => deps.events.append(release.stream, release.events, { expectedRevision: release.expectedRevision })));
  } catch {
    // The claims stay behind; the next claimant finds their record missing and takes them over.
  }
}

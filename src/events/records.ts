import type { RecordedEvent } from '../eventstore/port.js';
import type { StoredValue, Values } from '../schema/values.js';

/**
 * Record events: one stream per record. Schemas are versioned; `upcast` turns any stored version
 * into the current one, so readers never see an old shape.
 */

export const RECORD_STREAM_PREFIX = 'record-';

export function recordStream(recordId: string): string {
  return `${RECORD_STREAM_PREFIX}${recordId}`;
}

interface RecordEventBase {
  schemaVersion: 1;
  workspaceId: string;
  object: string;
  recordId: string;
  /** Set by readers, never stored: personal fields whose values this event held and that were erased since (they read null). */
  erased?: string[];
}

export interface RecordCreatedData extends RecordEventBase {
  fields: Values;
}

export interface FieldChange {
  from: StoredValue;
  to: StoredValue;
}

export interface RecordUpdatedData extends RecordEventBase {
  /** Only the fields that changed, each with its previous value. */
  changes: Record<string, FieldChange>;
}

/**
 * The erasure of a record's personal data (docs/privacy.md): its data key was deleted, so these
 * fields read null in every event; never a value. Read as an update setting them to null, so that
 * every reader (state, read models, webhooks) forgets them with no code of its own.
 */
export interface RecordErasedData extends RecordEventBase {
  fields: string[];
  reason: string | null;
}

export const RECORD_ERASED = 'RecordErased';

export interface RecordDeletedData extends RecordEventBase {
  /** The record as last saved, so consumers never depend on a read model that forgot it. */
  fields: Values;
  calculated: Values;
  createdAt: string;
  updatedAt: string;
}

/**
 * New values of the record's stored roll-ups (values computed from other records, e.g. an
 * invoice's subtotal from its lines), appended by the roll-up reactor when they change: a change
 * of the record like any other (its updatedAt moves, webhooks say `updated`), carrying the source
 * and correlation of the change that caused it.
 */
export interface RecordRollupsChangedData extends RecordEventBase {
  /** Every roll-up of the object, as now computed. */
  rollups: Values;
}

export type RecordEvent =
  | { type: 'RecordCreated'; data: RecordCreatedData }
  | { type: 'RecordUpdated'; data: RecordUpdatedData }
  | { type: 'RecordDeleted'; data: RecordDeletedData }
  | { type: 'RecordRollupsChanged'; data: RecordRollupsChangedData };

export type RecordEventType = RecordEvent['type'];

const RECORD_EVENT_TYPES: ReadonlySet<string> = new Set<string>(['RecordCreated', 'RecordUpdated', 'RecordDeleted', 'RecordRollupsChanged', RECORD_ERASED]);

/** The current-version record event held by a recorded event, or null for other event types. */
export function upcast(event: Omit<RecordedEvent, 'metadata'>): RecordEvent | null {
  if (!RECORD_EVENT_TYPES.has(event.type)) return null;
  const version = event.data['schemaVersion'];
  if (version !== 1) throw new Error(`${event.type} ${event.id}: unknown schemaVersion ${String(version)}`);
  if (event.type === RECORD_ERASED) {
    const { fields, reason: _reason, ...base } = event.data as unknown as RecordErasedData;
    const changes = Object.fromEntries(fields.map((key) => [key, { from: null, to: null }]));
    return { type: 'RecordUpdated', data: { ...base, changes, erased: [...fields].sort() } };
  }
  return { type: event.type, data: event.data } as unknown as RecordEvent;
}

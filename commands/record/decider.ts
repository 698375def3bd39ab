import { NotFound, ValidationFailed } from '../../src/core/errors.js';
import { sameStoredValue, type Values } from '../../src/schema/values.js';
import { checkRecordRules } from '../../src/schema/validate.js';
import type { FieldChange, RecordEvent } from '../../src/events/records.js';

/**
 * The record aggregate as pure functions: decide(command, state) -> events and
 * evolve(state, event) -> state. Handlers only load, decide and append.
 *
 * Every rule that depends on the stored record (the cross-field rules, checked on the merged
 * record) runs here, so that a command retried after a concurrency conflict is judged again on
 * the state it will actually change. Rules on the input alone (formats, one-of values, required
 * fields not cleared, links resolved) run once before, since a retry cannot change their outcome.
 */

export type RecordState =
  | { status: 'absent' }
  | { status: 'live'; workspaceId: string; object: string; fields: Values; rollups?: Values }
  | { status: 'deleted'; workspaceId: string; object: string };

export const initialState: RecordState = { status: 'absent' };

export interface RecordAddress {
  workspaceId: string;
  object: string;
  recordId: string;
}

export type RecordCommand =
  | ({ type: 'CreateRecord'; fields: Values } & RecordAddress)
  | ({ type: 'UpdateRecord'; fields: Values } & RecordAddress)
  | ({ type: 'DeleteRecord'; lastSaved: { calculated: Values; createdAt: string; updatedAt: string } } & RecordAddress)
  /** `rollups`: every roll-up of the object as now computed; `initial`: their values over no children. */
  | ({ type: 'SetRollups'; rollups: Values; initial: Values } & RecordAddress);

export function evolve(state: RecordState, event: RecordEvent): RecordState {
  const { workspaceId, object } = event.data;
  switch (event.type) {
    case 'RecordCreated':
      return { status: 'live', workspaceId, object, fields: { ...event.data.fields } };
    case 'RecordUpdated': {
      if (state.status !== 'live') return state;
      const fields = { ...state.fields };
      for (const [key, change] of Object.entries(event.data.changes)) fields[key] = change.to;
      return { ...state, fields };
    }
    case 'RecordDeleted':
      return { status: 'deleted', workspaceId, object };
    case 'RecordRollupsChanged':
      return state.status === 'live' ? { ...state, rollups: { ...event.data.rollups } } : state;
  }
}

/** A record of another workspace or object does not exist for this caller. */
function isLiveAt(state: RecordState, address: RecordAddress): state is Extract<RecordState, { status: 'live' }> {
  return state.status === 'live' && state.workspaceId === address.workspaceId && state.object === address.object;
}

export function decide(command: RecordCommand, state: RecordState): RecordEvent[] {
  const base = { schemaVersion: 1 as const, workspaceId: command.workspaceId, object: command.object, recordId: command.recordId };
  switch (command.type) {
    case 'CreateRecord': {
      if (state.status !== 'absent') throw new Error(`record ${command.recordId} already exists`);
      assertRules(command.object, command.fields);
      return [{ type: 'RecordCreated', data: { ...base, fields: withoutNulls(command.fields) } }];
    }
    case 'UpdateRecord': {
      if (!isLiveAt(state, command)) throw new NotFound(`${command.object} record ${command.recordId} not found`);
      const changes = changedFields(state.fields, command.fields);
      assertRules(command.object, { ...state.fields, ...command.fields });
      return Object.keys(changes).length === 0 ? [] : [{ type: 'RecordUpdated', data: { ...base, changes } }];
    }
    case 'DeleteRecord': {
      if (!isLiveAt(state, command)) throw new NotFound(`${command.object} record ${command.recordId} not found`);
      return [{ type: 'RecordDeleted', data: { ...base, fields: state.fields, ...command.lastSaved } }];
    }
    case 'SetRollups': {
      // A roll-up of a deleted record, or of one not created yet, is nobody's change.
      if (!isLiveAt(state, command)) return [];
      const known = state.rollups ?? command.initial;
      const same = Object.keys(command.rollups).every((key) => sameStoredValue(known[key] ?? null, command.rollups[key] ?? null));
      return same ? [] : [{ type: 'RecordRollupsChanged', data: { ...base, rollups: { ...command.rollups } } }];
    }
  }
}

function assertRules(object: string, merged: Values): void {
  const problem = checkRecordRules(object, merged);
  if (problem) throw new ValidationFailed(problem);
}

function changedFields(current: Values, sent: Values): Record<string, FieldChange> {
  const changes: Record<string, FieldChange> = {};
  for (const [key, to] of Object.entries(sent)) {
    const from = current[key] ?? null;
    if (!sameStoredValue(from, to)) changes[key] = { from, to };
  }
  return changes;
}

/** A new record stores only the values it has; null means "no value". */
function withoutNulls(fields: Values): Values {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null));
}

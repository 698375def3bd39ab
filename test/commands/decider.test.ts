import { describe, expect, it } from 'vitest';
import { decide, evolve, initialState, type RecordCommand, type RecordState } from '../../commands/record/decider.js';
import type { RecordEvent } from '../../src/events/records.js';
import { NotFound, ValidationFailed } from '../../src/core/errors.js';

const address = { workspaceId: 'w1', object: 'clients', recordId: 'r1' };
const base = { schemaVersion: 1 as const, ...address };
const created: RecordEvent = { type: 'RecordCreated', data: { ...base, fields: { name: 'Acme', tier: 'SMB' } } };
const survey = { workspaceId: 'w1', object: 'surveys', recordId: 's1' };
const surveyBase = { schemaVersion: 1 as const, ...survey };
const npsCreated: RecordEvent = { type: 'RecordCreated', data: { ...surveyBase, fields: { type: 'NPS', score: 9, date: '2024-01-01' } } };
const given = (...events: RecordEvent[]): RecordState => events.reduce(evolve, initialState);

describe('decide', () => {
  const lastSaved = { calculated: { openBalance: 0 }, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-02T00:00:00.000Z' };
  const cases: { name: string; given: RecordEvent[]; when: RecordCommand; then: RecordEvent[] | typeof NotFound | typeof ValidationFailed }[] = [
    {
      name: 'create on an absent record stores the values it has',
      given: [],
      when: { type: 'CreateRecord', ...address, fields: { name: 'Acme', tier: null } },
      then: [{ type: 'RecordCreated', data: { ...base, fields: { name: 'Acme' } } }],
    },
    {
      name: 'update records only changed fields with their previous values',
      given: [created],
      when: { type: 'UpdateRecord', ...address, fields: { name: 'Acme', tier: 'Enterprise', notes: 'hi' } },
      then: [{ type: 'RecordUpdated', data: { ...base, changes: { tier: { from: 'SMB', to: 'Enterprise' }, notes: { from: null, to: 'hi' } } } }],
    },
    {
      name: 'update without a change decides nothing',
      given: [created],
      when: { type: 'UpdateRecord', ...address, fields: { name: 'Acme' } },
      then: [],
    },
    {
      name: 'link lists compare by content',
      given: [{ type: 'RecordCreated', data: { ...base, fields: { contacts: ['a', 'b'] } } }],
      when: { type: 'UpdateRecord', ...address, fields: { contacts: ['a', 'b'] } },
      then: [],
    },
    {
      name: 'clearing a field is a change to null',
      given: [created],
      when: { type: 'UpdateRecord', ...address, fields: { tier: null } },
      then: [{ type: 'RecordUpdated', data: { ...base, changes: { tier: { from: 'SMB', to: null } } } }],
    },
    { name: 'update of an absent record is NotFound', given: [], when: { type: 'UpdateRecord', ...address, fields: { name: 'x' } }, then: NotFound },
    {
      name: 'update of a record of another workspace is NotFound',
      given: [created],
      when: { type: 'UpdateRecord', ...address, workspaceId: 'w2', fields: { name: 'x' } },
      then: NotFound,
    },
    {
      name: 'update of a record of another object is NotFound',
      given: [created],
      when: { type: 'UpdateRecord', ...address, object: 'contacts', fields: { name: 'x' } },
      then: NotFound,
    },
    {
      name: 'delete carries the record as last saved',
      given: [created, { type: 'RecordUpdated', data: { ...base, changes: { tier: { from: 'SMB', to: 'Enterprise' } } } }],
      when: { type: 'DeleteRecord', ...address, lastSaved },
      then: [{ type: 'RecordDeleted', data: { ...base, fields: { name: 'Acme', tier: 'Enterprise' }, ...lastSaved } }],
    },
    {
      name: 'delete of a deleted record is NotFound',
      given: [created, { type: 'RecordDeleted', data: { ...base, fields: {}, ...lastSaved } }],
      when: { type: 'DeleteRecord', ...address, lastSaved },
      then: NotFound,
    },
    {
      name: 'new roll-up values of a live record are a change',
      given: [created],
      when: { type: 'SetRollups', ...address, rollups: { openBalance: 100 }, initial: { openBalance: 0 } },
      then: [{ type: 'RecordRollupsChanged', data: { ...base, rollups: { openBalance: 100 } } }],
    },
    {
      name: 'roll-ups equal to their values over no children are no change on a record that never had any',
      given: [created],
      when: { type: 'SetRollups', ...address, rollups: { openBalance: 0 }, initial: { openBalance: 0 } },
      then: [],
    },
    {
      name: 'roll-ups equal to the last recorded ones are no change (a replayed reaction)',
      given: [created, { type: 'RecordRollupsChanged', data: { ...base, rollups: { openBalance: 100 } } }],
      when: { type: 'SetRollups', ...address, rollups: { openBalance: 100 }, initial: { openBalance: 0 } },
      then: [],
    },
    {
      name: 'roll-ups back to zero after the last child left are a change',
      given: [created, { type: 'RecordRollupsChanged', data: { ...base, rollups: { openBalance: 100 } } }],
      when: { type: 'SetRollups', ...address, rollups: { openBalance: 0 }, initial: { openBalance: 0 } },
      then: [{ type: 'RecordRollupsChanged', data: { ...base, rollups: { openBalance: 0 } } }],
    },
    {
      name: 'roll-ups of a deleted or absent record are nobody\'s change',
      given: [created, { type: 'RecordDeleted', data: { ...base, fields: {}, ...lastSaved } }],
      when: { type: 'SetRollups', ...address, rollups: { openBalance: 100 }, initial: { openBalance: 0 } },
      then: [],
    },
    {
      name: 'create checks the cross-field rules (an NPS score out of its scale)',
      given: [],
      when: { type: 'CreateRecord', ...survey, fields: { type: 'NPS', score: 11, date: '2024-01-01' } },
      then: ValidationFailed,
    },
    {
      name: 'update checks the rules on the merged record: CSAT no longer fits a stored score of 9',
      given: [npsCreated],
      when: { type: 'UpdateRecord', ...survey, fields: { type: 'CSAT' } },
      then: ValidationFailed,
    },
    {
      name: 'the same update decided again after another writer lowered the score passes (a retry is judged on fresh state)',
      given: [npsCreated, { type: 'RecordUpdated', data: { ...surveyBase, changes: { score: { from: 9, to: 4 } } } }],
      when: { type: 'UpdateRecord', ...survey, fields: { type: 'CSAT' } },
      then: [{ type: 'RecordUpdated', data: { ...surveyBase, changes: { type: { from: 'NPS', to: 'CSAT' } } } }],
    },
    {
      name: 'an update that passed on the state first loaded is refused when a concurrent writer broke the rule meanwhile',
      given: [npsCreated, { type: 'RecordUpdated', data: { ...surveyBase, changes: { type: { from: 'NPS', to: 'CSAT' }, score: { from: 9, to: 5 } } } }],
      when: { type: 'UpdateRecord', ...survey, fields: { score: 9 } },
      then: ValidationFailed,
    },
  ];

  it.each(cases)('$name', ({ given: history, when, then }) => {
    if (then === NotFound || then === ValidationFailed) expect(() => decide(when, given(...history))).toThrow(then);
    else expect(decide(when, given(...history))).toEqual(then);
  });

  it('refuses to create a record twice', () => {
    expect(() => decide({ type: 'CreateRecord', ...address, fields: {} }, given(created))).toThrow(/already exists/);
  });
});

describe('evolve', () => {
  it('folds created, updated and deleted', () => {
    const updated = given(created, { type: 'RecordUpdated', data: { ...base, changes: { tier: { from: 'SMB', to: null } } } });
    expect(updated).toEqual({ status: 'live', workspaceId: 'w1', object: 'clients', fields: { name: 'Acme', tier: null } });
    expect(evolve(updated, { type: 'RecordDeleted', data: { ...base, fields: {}, calculated: {}, createdAt: '', updatedAt: '' } })).toEqual({
      status: 'deleted',
      workspaceId: 'w1',
      object: 'clients',
    });
  });

  it('does not mutate the previous state', () => {
    const before = given(created);
    evolve(before, { type: 'RecordUpdated', data: { ...base, changes: { name: { from: 'Acme', to: 'B' } } } });
    expect(before).toEqual(given(created));
  });
});

import { describe, expect, it } from 'vitest';
import { decide, evolve, initialState, type RecordCommand, type RecordState } from '../../commands/record/decider.js';
import type { RecordEvent } from '../../src/events/records.js';
import { NotFound } from '../../src/core/errors.js';

const address = { workspaceId: 'w1', object: 'clients', recordId: 'r1' };
const base = { schemaVersion: 1 as const, ...address };
const created: RecordEvent = { type: 'RecordCreated', data: { ...base, fields: { name: 'Acme', tier: 'SMB' } } };
const given = (...events: RecordEvent[]): RecordState => events.reduce(evolve, initialState);

describe('decide', () => {
  const lastSaved = { calculated: { openBalance: 0 }, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-02T00:00:00.000Z' };
  const cases: { name: string; given: RecordEvent[]; when: RecordCommand; then: RecordEvent[] | typeof NotFound }[] = [
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
  ];

  it.each(cases)('$name', ({ given: history, when, then }) => {
    if (then === NotFound) expect(() => decide(when, given(...history))).toThrow(NotFound);
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

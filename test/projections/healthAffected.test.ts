import { describe, expect, it } from 'vitest';
import { affectedBy, readsCurrent } from '../../projections/health/affected.js';
import type { RecordEvent } from '../../src/events/records.js';
import type { RecordDocument } from '../../src/readstore/port.js';

/**
 * The health score reactor reads a record from the read model only when `affectedBy` looks at it:
 * for every event where it does not, the answer is the same without the read.
 */

const base = { schemaVersion: 1 as const, workspaceId: 'w', recordId: 'r' };
function event(type: RecordEvent['type'], object: string): RecordEvent {
  if (type === 'RecordCreated') return { type, data: { ...base, object, fields: { client: 'c1', contact: 'k1', invoice: 'i1' } } };
  if (type === 'RecordUpdated') return { type, data: { ...base, object, changes: { client: { from: 'c0', to: 'c1' }, healthScore: { from: 85, to: 75 } } } };
  if (type === 'RecordDeleted') return { type, data: { ...base, object, fields: { client: 'c1' }, calculated: {}, createdAt: '', updatedAt: '' } };
  return { type, data: { ...base, object, rollups: { balance: 1 } } };
}
const current = (object: string): RecordDocument => ({
  workspaceId: 'w',
  object,
  id: 'r',
  name: null,
  fields: { client: 'c2', contact: 'k2', invoice: 'i2' },
  calculated: {},
  createdAt: '',
  updatedAt: '',
  createdPosition: '0',
  revision: 1,
});

describe('health score inputs: which events need the record as the read model shows it', () => {
  it.each([
    ['RecordUpdated', 'clients', false],
    ['RecordCreated', 'clients', false],
    ['RecordUpdated', 'tasks', true],
    ['RecordUpdated', 'surveys', true],
    ['RecordUpdated', 'contacts', true],
    ['RecordUpdated', 'invoiceLines', true],
    ['RecordUpdated', 'opportunities', false],
    ['RecordCreated', 'tasks', false],
    ['RecordDeleted', 'contacts', false],
    ['RecordRollupsChanged', 'billing', true],
    ['RecordRollupsChanged', 'clients', false],
  ] as const)('%s of %s: reads it %s', (type, object, reads) => {
    expect(readsCurrent(event(type, object))).toBe(reads);
  });

  it.each(['clients', 'tasks', 'surveys', 'contacts', 'invoiceLines', 'billing', 'opportunities', 'meetings'])(
    'for %s, an event that does not read it is affected the same with or without the record',
    (object) => {
      for (const type of ['RecordCreated', 'RecordUpdated', 'RecordDeleted', 'RecordRollupsChanged'] as const) {
        const given = event(type, object);
        if (!readsCurrent(given)) expect(affectedBy(given, null)).toEqual(affectedBy(given, current(object)));
      }
    },
  );
});

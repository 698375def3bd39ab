import { describe, expect, it } from 'vitest';
import { dateTrigger, triggersFor, type Template } from '../../projections/automation/triggers.js';
import type { RecordEvent } from '../../src/events/records.js';

/** Which templates a client's event fires (given templates, when an event, then triggers with keys). */

const TODAY = '2026-06-01';
const base = { schemaVersion: 1 as const, workspaceId: 'w', object: 'clients', recordId: 'c1' };
const created = (fields: Record<string, string>): RecordEvent => ({ type: 'RecordCreated', data: { ...base, fields } });
const updated = (changes: Record<string, { from: string | null; to: string | null }>): RecordEvent => ({ type: 'RecordUpdated', data: { ...base, changes } });
const template = (id: string, triggerType: string, extra: Partial<Template> = {}): Template => ({
  id,
  triggerType,
  triggerField: null,
  triggerValue: null,
  triggerDays: null,
  ...extra,
});

const onCreate = template('t-new', 'When a client is created');
const atRisk = template('t-risk', 'When a field changes', { triggerField: 'health', triggerValue: 'at risk' });
const anyTier = template('t-tier', 'When a field changes', { triggerField: 'tier' });
const renewal = template('t-date', 'Days before a date', { triggerField: 'renewalDate', triggerDays: 30 });
const manual = template('t-manual', 'Manually');
const all = [onCreate, atRisk, anyTier, renewal, manual];

describe('triggersFor', () => {
  it.each<[string, RecordEvent, string[]]>([
    ['a new client fires the created templates', created({ name: 'A' }), ['t-new:c1:created']],
    ['a new client with a renewal in 30 days also fires the date template', created({ renewalDate: '2026-07-01' }), ['t-new:c1:created', 't-date:c1:date:renewalDate=2026-07-01']],
    ['a renewal in 31 days does not fire yet', created({ renewalDate: '2026-07-02' }), ['t-new:c1:created']],
    ['creating with health At Risk is no change', created({ health: 'At Risk' }), ['t-new:c1:created']],
    ['health changing to At Risk fires (any case)', updated({ health: { from: 'Healthy', to: 'At Risk' } }), ['t-risk:c1:field:health@7']],
    ['health changing to Healthy does not', updated({ health: { from: 'At Risk', to: 'Healthy' } }), []],
    ['an empty triggerValue fires on any change, also to empty', updated({ tier: { from: 'SMB', to: null } }), ['t-tier:c1:field:tier@7']],
    ['a date moved into the window fires for that date', updated({ renewalDate: { from: null, to: '2026-06-01' } }), ['t-date:c1:date:renewalDate=2026-06-01']],
    ['a date in the past fires nothing', updated({ renewalDate: { from: null, to: '2026-05-31' } }), []],
    ['other fields fire nothing', updated({ notes: { from: null, to: 'x' } }), []],
  ])('%s', (_, event, keys) => {
    expect(triggersFor(event, 7, all, TODAY).map((trigger) => trigger.triggerKey)).toEqual(keys);
  });

  it('other objects and deletions fire nothing', () => {
    expect(triggersFor({ type: 'RecordCreated', data: { ...base, object: 'contacts', fields: {} } }, 0, all, TODAY)).toEqual([]);
    expect(triggersFor({ type: 'RecordDeleted', data: { ...base, fields: {}, calculated: {}, createdAt: '', updatedAt: '' } }, 3, all, TODAY)).toEqual([]);
  });

  it('the daily check: the same date gives the same key every day of its window', () => {
    expect(dateTrigger(renewal, 'c1', '2026-06-20', TODAY)?.triggerKey).toBe('t-date:c1:date:renewalDate=2026-06-20');
    expect(dateTrigger(renewal, 'c1', '2026-06-20', '2026-06-10')?.triggerKey).toBe('t-date:c1:date:renewalDate=2026-06-20');
    expect(dateTrigger(renewal, 'c1', 'not a date', TODAY)).toBeNull();
    expect(dateTrigger(onCreate, 'c1', '2026-06-20', TODAY)).toBeNull();
  });
});

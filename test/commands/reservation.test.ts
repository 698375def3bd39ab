import { describe, expect, it } from 'vitest';
import type { RecordState } from '../../commands/record/decider.js';
import { fieldsKey, heldKeys, nameKey, recordHasKey, reservationStream } from '../../commands/reservations/keys.js';
import { claimEvents, CREATE_GRACE_MS, FREE, judge, reservationState, type Judgement } from '../../commands/reservations/reservation.js';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { defaultObject } from '../../src/schema/catalogue.js';

const clients = defaultObject('clients')!;
const contacts = defaultObject('contacts')!;
const now = new Date('2024-06-01T12:00:00.000Z');
const acme = nameKey(clients, { name: ' Acme ' })!;
const live = (fields: Record<string, string>): RecordState => ({ status: 'live', workspaceId: 'w1', object: 'clients', fields });
const reservedBy = (recordId: string, revision = 0, created = now): RecordedEvent => ({
  id: 'e',
  type: 'ValueReserved',
  stream: 's',
  revision,
  position: '1',
  created,
  data: { recordId },
  metadata: {} as RecordedEvent['metadata'],
});

describe('reservation keys', () => {
  it('normalise as filters do (case, and the name trimmed), and hash to one stream per value', () => {
    expect(acme).toEqual({ kind: 'name', fields: ['name'], values: ['acme'] });
    expect(reservationStream('w1', 'clients', acme)).toBe(reservationStream('w1', 'clients', nameKey(clients, { name: 'ACME' })!));
    expect(reservationStream('w1', 'clients', acme)).not.toBe(reservationStream('w2', 'clients', acme));
    expect(reservationStream('w1', 'clients', acme)).toMatch(/^reservation-w1-clients-[0-9a-f]{40}$/);
    expect(nameKey(contacts, { firstName: 'Ana', lastName: 'Lima' })).toEqual({ kind: 'name', fields: ['firstName', 'lastName'], values: ['ana lima'] });
    expect(fieldsKey(['email'], { email: 'Ana@X.test' })).toEqual({ kind: 'fields', fields: ['email'], values: ['ana@x.test'] });
    expect(fieldsKey(['email'], { email: null })).toBeNull();
  });

  it('a record holds its name and its unique values', () => {
    expect(heldKeys(clients, { name: 'Acme', clientNumber: 'CL-00001' })).toEqual([acme, { kind: 'fields', fields: ['clientNumber'], values: ['cl-00001'] }]);
    expect(recordHasKey(clients, acme, { name: 'acme' })).toBe(true);
    expect(recordHasKey(clients, acme, { name: 'Beta' })).toBe(false);
  });
});

describe('judge: who holds a key value', () => {
  const cases: { name: string; given: RecordedEvent | undefined; holder: RecordState | null; then: Judgement; at?: Date }[] = [
    { name: 'no stream: free, claim with no_stream', given: undefined, holder: null, then: { kind: 'free', expectedRevision: 'no_stream' } },
    {
      name: 'released: free, claim after the release',
      given: { ...reservedBy('r1', 3), type: 'ValueReleased' },
      holder: null,
      then: { kind: 'free', expectedRevision: 3 },
    },
    { name: 'held by the writer itself', given: reservedBy('self'), holder: null, then: { kind: 'mine' } },
    { name: 'held by a live record that has the value', given: reservedBy('r1'), holder: live({ name: 'ACME' }), then: { kind: 'held', holder: 'r1' } },
    {
      name: 'a holder renamed without a release is stale: taken over at its revision',
      given: reservedBy('r1', 2),
      holder: live({ name: 'Beta' }),
      then: { kind: 'stale', expectedRevision: 2, holder: 'r1' },
    },
    {
      name: 'a deleted holder is stale',
      given: reservedBy('r1'),
      holder: { status: 'deleted', workspaceId: 'w1', object: 'clients' },
      then: { kind: 'stale', expectedRevision: 0, holder: 'r1' },
    },
    { name: 'a holder whose create is under way is pending', given: reservedBy('r1'), holder: { status: 'absent' }, then: { kind: 'pending', holder: 'r1' } },
    {
      name: 'a holder that never came within the grace period is stale',
      given: reservedBy('r1', 0, new Date(now.getTime() - CREATE_GRACE_MS - 1)),
      holder: { status: 'absent' },
      then: { kind: 'stale', expectedRevision: 0, holder: 'r1' },
    },
  ];

  it.each(cases)('$name', ({ given, holder, then }) => {
    expect(judge(reservationState(given), holder, clients, 'w1', acme, 'self', now)).toEqual(then);
  });

  it('a claim over a stale holder releases it first, in the same append', () => {
    const data = { schemaVersion: 1 as const, workspaceId: 'w1', object: 'clients', key: acme, recordId: 'new' };
    expect(claimEvents({ kind: 'free', expectedRevision: 'no_stream' }, data)).toEqual([{ type: 'ValueReserved', data }]);
    expect(claimEvents({ kind: 'stale', expectedRevision: 4, holder: 'old' }, data)).toEqual([
      { type: 'ValueReleased', data: { ...data, recordId: 'old', reason: 'stale' } },
      { type: 'ValueReserved', data },
    ]);
    expect(reservationState(undefined)).toBe(FREE);
  });
});

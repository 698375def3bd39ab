import { describe, expect, it } from 'vitest';
import type { RecordState } from '../../commands/record/decider.js';
import { fieldsKey, heldKeys, nameKey, recordHasKey, reservationStream } from '../../commands/reservations/keys.js';
import { claimEvents, CREATE_GRACE_MS, FREE, judge, needsHolderChange, reservationState, type Judgement } from '../../commands/reservations/reservation.js';
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

  // EventStoreDB writes a claim, then the holder's change that gains the value (a rename to it):
  // between the two, the holder's last change says whether that change has landed.
  const claimedAt = new Date(now.getTime() - 1_000);
  const claimBy = (actionId: string, created = claimedAt): RecordedEvent => ({ ...reservedBy('r1', 3, created), metadata: { actionId } as RecordedEvent['metadata'] });
  const changes: { name: string; given: RecordedEvent; holder: RecordState; holderChange: { created: Date; actionId: string | null } | null; then: Judgement }[] = [
    {
      name: 'a live holder without the value whose last change came before its young claim is pending (its change is on the way)',
      given: claimBy('rename'),
      holder: live({ name: 'Beta' }),
      holderChange: { created: new Date(claimedAt.getTime() - 5_000), actionId: 'create' },
      then: { kind: 'pending', holder: 'r1' },
    },
    {
      name: 'the same once the claim is older than the grace period is stale (its process died between the two)',
      given: claimBy('rename', new Date(now.getTime() - CREATE_GRACE_MS - 1)),
      holder: live({ name: 'Beta' }),
      holderChange: { created: new Date(now.getTime() - CREATE_GRACE_MS - 5_000), actionId: 'create' },
      then: { kind: 'stale', expectedRevision: 3, holder: 'r1' },
    },
    {
      name: 'a holder whose last change is the claim\'s own action and has not the value is stale (renamed away since, or it never set it)',
      given: claimBy('rename'),
      holder: live({ name: 'Beta' }),
      holderChange: { created: claimedAt, actionId: 'rename' },
      then: { kind: 'stale', expectedRevision: 3, holder: 'r1' },
    },
    {
      name: 'a holder changed after its claim that no longer has the value is stale',
      given: claimBy('create'),
      holder: live({ name: 'Beta' }),
      holderChange: { created: new Date(claimedAt.getTime() + 10), actionId: 'later' },
      then: { kind: 'stale', expectedRevision: 3, holder: 'r1' },
    },
    {
      name: 'a holder that has the value holds it, whatever its last change',
      given: claimBy('rename'),
      holder: live({ name: 'ACME' }),
      holderChange: { created: new Date(claimedAt.getTime() - 5_000), actionId: 'create' },
      then: { kind: 'held', holder: 'r1' },
    },
  ];

  it.each(changes)('$name', ({ given, holder, holderChange, then }) => {
    expect(judge(reservationState(given), holder, clients, 'w1', acme, 'self', now, holderChange)).toEqual(then);
  });

  it('the holder\'s last change is read only for a live holder without the value and a young claim', () => {
    expect(needsHolderChange(reservationState(claimBy('x')), live({ name: 'Beta' }), clients, acme, now)).toBe(true);
    expect(needsHolderChange(reservationState(claimBy('x')), live({ name: 'Acme' }), clients, acme, now)).toBe(false);
    expect(needsHolderChange(reservationState(claimBy('x', new Date(now.getTime() - CREATE_GRACE_MS))), live({ name: 'Beta' }), clients, acme, now)).toBe(false);
    expect(needsHolderChange(reservationState(claimBy('x')), { status: 'absent' }, clients, acme, now)).toBe(false);
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

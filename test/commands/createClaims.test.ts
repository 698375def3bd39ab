import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AutoNumbers } from '../../commands/autoNumbers.js';
import { createRecord, type CreateRequest } from '../../commands/create.js';
import type { CommandDeps } from '../../commands/deps.js';
import { fieldsKey, nameKey, reservationStream } from '../../commands/reservations/keys.js';
import { releaseAppends } from '../../commands/reservations/store.js';
import { loadRecord } from '../../commands/record/repository.js';
import { ValidationFailed } from '../../src/core/errors.js';
import type { EventMetadata, EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import type { ReadStore, Values } from '../../src/readstore/port.js';
import { defaultObject } from '../../src/schema/catalogue.js';

/**
 * Creates presume their keys never claimed and their counter as last seen, and learn otherwise
 * from the append's Conflict: two store instances on one file (as two API processes) must still
 * never hold one name or one number twice.
 */

const root = mkdtempSync(join(tmpdir(), 'csr-create-claims-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const clients = defaultObject('clients')!;
const metadata: EventMetadata = { source: 'api', actor: { type: 'system', id: 't', name: 't' }, actionId: 'a', correlationId: 'c', causationId: 'c' };
const NUMBERED = { object: clients, field: 'clientNumber', prefix: 'CL-' };

describe('creates of two writers on one log', () => {
  const opened: EventStore[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((events) => events.close()));
  });

  /** Two event stores on one file, each with its own auto-number state, as two API processes have. */
  const twoWriters = (): [CommandDeps, CommandDeps] => {
    const dir = join(root, randomUUID());
    mkdirSync(dir);
    const writer = (): CommandDeps => {
      const events = openSqliteEventStore({ path: join(dir, 'events.sqlite') });
      opened.push(events);
      return { events, readStore: {} as ReadStore, autoNumbers: new AutoNumbers(events), listUsers: async () => [], waitVisible: async () => undefined };
    };
    return [writer(), writer()];
  };

  const create = (deps: CommandDeps, values: Values, options: { numbered?: boolean; match?: 'name' | 'clientNumber' } = {}) => {
    const recordId = randomUUID();
    const matchKey = options.match === 'clientNumber' ? fieldsKey(['clientNumber'], values) : nameKey(clients, values);
    const request: CreateRequest = { workspaceId: 'w1', object: clients, recordId, values: { ...values }, matchKey, numbered: options.numbered === false ? null : NUMBERED };
    return createRecord(deps, request, metadata, metadata).then((outcome) => ({ recordId, outcome, values: request.values }));
  };

  const nameStream = (name: string) => reservationStream('w1', 'clients', nameKey(clients, { name })!);

  it('a name the other writer created is matched, claimed once, and takes no number', async () => {
    const [a, b] = twoWriters();
    const first = await create(a, { name: 'Acme' });
    expect(first.outcome.kind).toBe('created');
    const second = await create(b, { name: 'ACME' });
    expect(second.outcome).toEqual({ kind: 'matched', holder: first.recordId });
    expect(await b.events.readStream(`record-${second.recordId}`)).toEqual([]);
    const claims = await a.events.readStream(nameStream('acme'));
    expect(claims.map((event) => [event.type, event.data['recordId']])).toEqual([['ValueReserved', first.recordId]]);
    // Gap-free: the match took no number; the next create on either writer takes the second.
    expect((await create(b, { name: 'Beta' })).values['clientNumber']).toBe('CL-00002');
  });

  it('a number the other writer set by hand fails the create that would hold it too', async () => {
    const [a, b] = twoWriters();
    const held = await create(a, { name: 'Acme', clientNumber: 'CL-00042' }, { numbered: false, match: 'clientNumber' });
    expect(held.outcome.kind).toBe('created');
    await expect(create(b, { name: 'Other', clientNumber: 'cl-00042' }, { numbered: false })).rejects.toBeInstanceOf(ValidationFailed);
    const claims = await b.events.readStream(reservationStream('w1', 'clients', fieldsKey(['clientNumber'], { clientNumber: 'CL-00042' })!));
    expect(claims.map((event) => event.data['recordId'])).toEqual([held.recordId]);
  });

  it('a name released by the other writer is claimed again at the stream revision it reached', async () => {
    const [a, b] = twoWriters();
    const first = await create(a, { name: 'Acme' });
    const scope = { events: a.events, workspaceId: 'w1', object: clients, loadState: async (id: string) => (await loadRecord(a.events, id)).state };
    const [release] = await releaseAppends(scope, [nameKey(clients, { name: 'Acme' })!], first.recordId, 'renamed', metadata);
    await a.events.append(release!.stream, release!.events, { expectedRevision: release!.expectedRevision });
    const second = await create(b, { name: 'acme' });
    expect(second.outcome.kind).toBe('created');
    const claims = await b.events.readStream(nameStream('acme'));
    expect(claims.map((event) => [event.type, event.revision, event.data['recordId']])).toEqual([
      ['ValueReserved', 0, first.recordId],
      ['ValueReleased', 1, first.recordId],
      ['ValueReserved', 2, second.recordId],
    ]);
  });

  it('numbers stay unique and gap-free when the writers take turns and race', async () => {
    const [a, b] = twoWriters();
    const made = [];
    for (let round = 0; round < 3; round++) {
      made.push(await create(a, { name: `A${round}` }), await create(b, { name: `B${round}` }));
      made.push(...(await Promise.all([create(a, { name: `C${round}` }), create(b, { name: `D${round}` }), create(a, { name: `E${round}` })])));
    }
    const numbers = made.map((created) => created.values['clientNumber']).sort();
    expect(numbers).toEqual(Array.from({ length: made.length }, (_, i) => `CL-${String(i + 1).padStart(5, '0')}`));
    for (const created of made) {
      const [event] = await a.events.readStream(`record-${created.recordId}`);
      expect((event!.data['fields'] as Values)['clientNumber']).toBe(created.values['clientNumber']);
    }
  });
});

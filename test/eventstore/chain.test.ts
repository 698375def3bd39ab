import { NO_STREAM } from '@eventstore/db-client';
import { describe, expect, it } from 'vitest';
import { canonicalJson, chainForStream, chainHash, chainHashOfJson, GENESIS, storedMetadataJson } from '../../src/eventstore/chain.js';
import { ChainCheck, checkChainByPages, type StoredText } from '../../src/eventstore/chainCheck.js';
import { chainedAppend } from '../../src/eventstore/eventstoredb/mapping.js';
import type { NewEvent, RecordedEvent } from '../../src/eventstore/port.js';
import { formatPosition } from '../../src/eventstore/position.js';

const metadata = { source: 'api' as const, actor: { type: 'apiKey' as const, id: 'k', name: 'Key' }, actionId: 'a', correlationId: 'a', causationId: 'a' };
const newEvent = (id: string, data: Record<string, unknown> = { n: 1 }): NewEvent => ({ id, type: 'Happened', data, metadata });

describe('canonicalJson', () => {
  it.each([
    [{ b: 1, a: [1, 'x', null] }, '{"a":[1,"x",null],"b":1}'],
    [{ z: { y: 2, x: 1 }, u: undefined }, '{"z":{"x":1,"y":2}}'],
    [[undefined, -0, 1e21], '[null,0,1e+21]'],
    [{ at: new Date(0) }, '{"at":"1970-01-01T00:00:00.000Z"}'],
    ['é"\n', JSON.stringify('é"\n')],
    [{ 'b"q': true, a: NaN, B: -Infinity, é: 1.5, nested: { z: [{ y: null, x: false }], a: {} } }, '{"B":null,"a":null,"b\\"q":true,"nested":{"a":{},"z":[{"x":false,"y":null}]},"é":1.5}'],
    [[() => 1, { f: () => 1, s: 'x' }, new Date(1)], '[null,{"s":"x"},"1970-01-01T00:00:00.001Z"]'],
  ])('%j -> %s', (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
    // The hash made before storing equals the one made from the stored text.
    expect(canonicalJson(JSON.parse(JSON.stringify(value)))).toBe(expected);
  });
});

describe('the per-stream chain (EventStoreDB)', () => {
  it.each([
    ['any on a new stream', 'any', null, { expectedRevision: NO_STREAM, firstRevision: 0, previous: GENESIS, retryable: true }],
    ['a number equal to the last revision', 3, { revision: 3n, hash: 'h3' }, { expectedRevision: 3n, firstRevision: 4, previous: 'h3', retryable: false }],
    ['any after an event written before the chain', 'any', { revision: 0n, hash: null }, { expectedRevision: 0n, firstRevision: 1, previous: GENESIS, retryable: true }],
    ['no_stream on an existing stream', 'no_stream', { revision: 0n, hash: 'h' }, 'conflict'],
    ['stream_exists on a missing stream', 'stream_exists', null, 'conflict'],
    ['a number that is not the last revision', 2, { revision: 3n, hash: 'h' }, 'conflict'],
  ] as const)('given %s', (_name, expected, last, plan) => {
    expect(chainedAppend(expected, last)).toEqual(plan);
  });

  it('chains the events of one append after the previous hash, and ChainCheck accepts them', () => {
    const chained = chainForStream('s', 0, GENESIS, [newEvent('e1'), newEvent('e2', { n: 2 })]);
    expect(chained[0]!.metadata.hash).toBe(chainHash(GENESIS, { id: 'e1', stream: 's', revision: 0, type: 'Happened', data: { n: 1 }, metadata }));
    const recorded = chained.map((event, revision): RecordedEvent => ({ ...event, stream: 's', revision, position: formatPosition(BigInt(revision + 1)), created: new Date() }));
    const check = new ChainCheck('stream');
    for (const event of recorded) check.add(event);
    expect(check.firstBreak).toBeNull();
    expect(check.head).toBe(chained[1]!.metadata.hash);
  });
});

describe('ChainCheck (log scope)', () => {
  const recorded = (seq: number, hash?: string): RecordedEvent => ({
    id: `e${seq}`, type: 'Happened', stream: 's', revision: seq, position: formatPosition(BigInt(seq)), created: new Date(seq), data: {}, metadata: { ...metadata, ...(hash ? { hash } : {}) },
  });
  const chain = (events: RecordedEvent[], previous = GENESIS): RecordedEvent[] => {
    let head = previous;
    return events.map((event) => {
      head = chainHash(head, { id: event.id, stream: event.stream, revision: event.revision, type: event.type, created: event.created.getTime(), data: event.data, metadata });
      return { ...event, metadata: { ...metadata, hash: head } };
    });
  };

  it('counts events written before the chain, then checks from the first chained one', () => {
    const check = new ChainCheck('log');
    for (const event of [recorded(1), recorded(2), ...chain([recorded(3), recorded(4)])]) check.add(event);
    expect({ unchained: check.unchained, chained: check.chained, broken: check.firstBreak }).toEqual({ unchained: 2, chained: 2, broken: null });
  });

  it('breaks at an event without a hash after the chain began, and at a removed event', () => {
    const withGap = new ChainCheck('log');
    for (const event of [...chain([recorded(1)]), recorded(2)]) withGap.add(event);
    expect(withGap.firstBreak?.position).toBe(formatPosition(2n));

    const removed = new ChainCheck('log');
    const [a, , c] = chain([recorded(1), recorded(2), recorded(3)]);
    for (const event of [a!, c!]) removed.add(event);
    expect(removed.firstBreak?.eventId).toBe('e3');
  });
});

describe('canonical storage and the fast check', () => {
  const data = { workspaceId: 'w', object: 'clients', fields: { name: 'Acme', 10: 'ten', 9: 'nine', nested: { b: 1, a: [1, { d: 2, c: 3 }] } } };
  const base = { id: 'e1', stream: 's', revision: 0, type: 'Happened', created: 5 };

  it('hashes JSON text exactly as chainHash hashes the values, and stores the hash as the last metadata key', () => {
    const expected = chainHash(GENESIS, { ...base, data, metadata });
    expect(chainHashOfJson(GENESIS, { ...base, data: canonicalJson(data), metadata: canonicalJson(metadata) })).toBe(expected);
    const { id: _id, created: _created, ...noCreated } = base;
    expect(chainHashOfJson(GENESIS, { id: 'e1', ...noCreated, data: '{}', metadata: '{}' })).toBe(chainHash(GENESIS, { id: 'e1', ...noCreated, data: {}, metadata: {} }));
    const stored = JSON.parse(storedMetadataJson(canonicalJson(metadata), expected));
    expect(stored).toEqual({ ...metadata, hash: expected });
    expect(Object.keys(stored).at(-1)).toBe('hash');
    expect(storedMetadataJson('{}', 'h')).toBe('{"hash":"h"}');
  });

  const stored = (text: { data: string; metadata: string }, hash: string): RecordedEvent => ({
    ...base, position: formatPosition(1n), created: new Date(base.created), data: JSON.parse(text.data), metadata: JSON.parse(storedMetadataJson(text.metadata, hash)),
  });
  const verdict = (event: RecordedEvent) => {
    const check = new ChainCheck('log');
    check.add(event);
    return { chained: check.chained, broken: check.firstBreak?.reason ?? null };
  };
  const hash = chainHash(GENESIS, { ...base, data, metadata });

  it('accepts an event stored canonically, one stored in another key order (integer-like keys, older releases), and refuses an edit', () => {
    expect(verdict(stored({ data: canonicalJson(data), metadata: canonicalJson(metadata) }, hash))).toEqual({ chained: 1, broken: null });
    expect(verdict(stored({ data: JSON.stringify(data), metadata: JSON.stringify(metadata) }, hash))).toEqual({ chained: 1, broken: null });
    const edited = canonicalJson({ ...data, fields: { ...data.fields, name: 'Acme Ltd' } });
    expect(verdict(stored({ data: edited, metadata: canonicalJson(metadata) }, hash)).broken).toMatch(/does not match/);
    const otherActor = canonicalJson({ ...metadata, actor: { ...metadata.actor, name: 'Someone else' } });
    expect(verdict(stored({ data: canonicalJson(data), metadata: otherActor }, hash)).broken).toMatch(/does not match/);
  });
});

describe('ChainCheck.addStoredText (the embedded store checks the stored text without parsing it)', () => {
  const data = { workspaceId: 'w', fields: { name: 'Acme', 10: 'ten', 9: 'nine' } };
  const base = { id: 'e1', stream: 's', revision: 0, type: 'Happened', created: 5 };
  const hash = chainHash(GENESIS, { ...base, data, metadata });
  const text = (over: Partial<StoredText> = {}): StoredText => ({ ...base, data: canonicalJson(data), metadata: storedMetadataJson(canonicalJson(metadata), hash), ...over });
  const parsed = (stored: StoredText): RecordedEvent => ({ ...stored, position: formatPosition(7n), created: new Date(stored.created), data: JSON.parse(stored.data), metadata: JSON.parse(stored.metadata) });

  it('accepts an event stored as the canonical text it was hashed as, exactly as add does', () => {
    const fast = new ChainCheck('log');
    expect(fast.addStoredText(text())).toBe(true);
    const slow = new ChainCheck('log');
    slow.add(parsed(text()));
    expect(fast.report(1)).toEqual(slow.report(1));
    expect(fast.report(1)).toEqual({ events: 1, chained: 1, unchained: 0, head: hash, firstBreak: null });
    // Metadata with nothing but the hash; the stream scope leaves the commit time out.
    const bare = chainHash(GENESIS, { ...base, data, metadata: {} });
    expect(new ChainCheck('log').addStoredText(text({ metadata: storedMetadataJson('{}', bare) }))).toBe(true);
    const { created: _created, ...withoutTime } = base;
    const perStream = chainHash(GENESIS, { ...withoutTime, data, metadata });
    expect(new ChainCheck('stream').addStoredText(text({ metadata: storedMetadataJson(canonicalJson(metadata), perStream) }))).toBe(true);
  });

  it('leaves to add (parsed) what the text does not prove: another form, an edit, no hash, a wrong previous hash, a break found', () => {
    const cases: Array<[string, StoredText, string | null]> = [
      ['stored by an older release in another key order', text({ data: JSON.stringify(data), metadata: JSON.stringify({ ...metadata, hash }) }), null],
      ['an edited value', text({ data: canonicalJson({ ...data, fields: { name: 'Acme Ltd' } }) }), 'its hash does not match'],
      ['an edited commit time', text({ created: 6 }), 'its hash does not match'],
      ['no hash', text({ metadata: canonicalJson(metadata) }), null],
    ];
    for (const [name, stored, broken] of cases) {
      const check = new ChainCheck('log');
      expect(check.addStoredText(stored), name).toBe(false);
      expect(check.report(0), name).toEqual({ events: 0, chained: 0, unchained: 0, head: GENESIS, firstBreak: null });
      check.add(parsed(stored));
      expect(check.firstBreak?.reason ?? null, name).toEqual(broken === null ? null : expect.stringContaining(broken));
    }
    const after = new ChainCheck('log');
    expect(after.addStoredText(text())).toBe(true);
    expect(after.addStoredText(text()), 'the same event again: its previous hash is not GENESIS').toBe(false);
    after.add(parsed(text()));
    expect(after.firstBreak).not.toBeNull();
    expect(after.addStoredText(text())).toBe(false);
  });
});

describe('checkChainByPages (stores that give their events parsed)', () => {
  const events = chainForStream('s', 0, GENESIS, [newEvent('e1'), newEvent('e2'), newEvent('e3')]).map(
    (event, revision): RecordedEvent => ({ ...event, stream: 's', revision, position: formatPosition(BigInt(revision + 1)), created: new Date() }),
  );
  const pagesOf2 = async (from: string) => events.filter((event) => from === 'start' || event.position > from).slice(0, 2);

  it('checks every page up to `until`, telling progress', async () => {
    const told: number[] = [];
    expect(await checkChainByPages('stream', pagesOf2, events[2]!.position, (count) => told.push(count))).toEqual({ events: 3, chained: 3, unchained: 0, head: events[2]!.metadata.hash, firstBreak: null });
    expect(told).toEqual([2, 3]);
    expect(await checkChainByPages('stream', pagesOf2, events[0]!.position)).toMatchObject({ events: 1, head: events[0]!.metadata.hash });
    expect(await checkChainByPages('stream', pagesOf2, null)).toEqual({ events: 0, chained: 0, unchained: 0, head: GENESIS, firstBreak: null });
  });
});

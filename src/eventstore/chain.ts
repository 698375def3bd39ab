import { hash as digest } from 'node:crypto';
import type { ChainScope, EventMetadata, NewEvent } from './port.js';

/**
 * The audit hash chain (docs/auditing.md). Every event appended since the chain exists carries
 * `metadata.hash` = SHA-256(previous hash + canonical JSON of this event as stored), so editing,
 * removing or reordering an event breaks every hash after it. It covers the event as stored (the
 * data as written, later ciphertext for personal fields), never a rendered form, so an erasure
 * that only destroys a key leaves the chain intact.
 *
 * Scope: the embedded store chains the whole log in commit order (the previous event is the one
 * before in the log, and `created` is covered). EventStoreDB cannot append "after the head of $all"
 * atomically, so there the chain runs per stream and `created` (set by the server after the hash
 * is made) is not covered.
 *
 * Upgrade rule: events written before the chain existed carry no hash. The chain starts at the
 * first chained event, whose previous hash is GENESIS; from then on an event without a hash is a
 * break.
 */

export const GENESIS = '0'.repeat(64);

/**
 * Set on an event whose data a reader made readable (personal values opened, src/privacy): the
 * data as stored, which is what the chain covers.
 */
export const STORED_DATA: unique symbol = Symbol('stored data');

/** The data the chain covers: as stored, even when the event reads with opened values. */
export function storedDataOf(event: { data: unknown; [STORED_DATA]?: unknown }): unknown {
  return event[STORED_DATA] ?? event.data;
}

export type { ChainScope };

/** What the hash covers. `created` only where the store assigns it before hashing (the log scope). */
export interface ChainContent {
  id: string;
  stream: string;
  revision: number;
  type: string;
  created?: number;
  data: unknown;
  /** Without `hash`. */
  metadata: unknown;
}

/**
 * JSON with object keys sorted at every level, with JSON.stringify's rules otherwise (toJSON,
 * undefined members dropped, undefined in arrays as null), so that a hash made before storing
 * equals the one made from what a store gives back, whatever order it keeps keys in. Every event
 * appended goes through it twice (data and metadata): primitives are written without a call into
 * JSON.stringify where its answer is known, and member names, the same few over and over, are
 * quoted once.
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // JSON.stringify writes a finite number as String does (-0 as 0), and the others as null.
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      return value === null ? 'null' : canonicalObject(value);
    default:
      // undefined, functions and symbols: null (members of those kinds are dropped before); a BigInt throws as in JSON.stringify.
      return JSON.stringify(value) ?? 'null';
  }
}

function canonicalObject(value: object): string {
  const json = (value as { toJSON?: () => unknown }).toJSON;
  if (typeof json === 'function') return canonicalJson(json.call(value));
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      const item = value[i] as unknown;
      out += item === undefined || typeof item === 'function' ? 'null' : canonicalJson(item);
    }
    return out + ']';
  }
  const keys = Object.keys(value);
  if (!isSorted(keys)) keys.sort();
  let out = '{';
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || typeof item === 'function') continue;
    if (out.length > 1) out += ',';
    out += quotedName(key) + ':' + canonicalJson(item);
  }
  return out + '}';
}

function isSorted(keys: string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) return false;
  return true;
}

/** Member names as JSON strings; a bounded cache, as names come from clients too (field keys). */
const QUOTED_NAMES_MAX = 4096;
const quotedNames = new Map<string, string>();

function quotedName(key: string): string {
  let quoted = quotedNames.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedNames.size < QUOTED_NAMES_MAX) quotedNames.set(key, quoted);
  }
  return quoted;
}

export function chainHash(previous: string, content: ChainContent): string {
  return chainHashOfJson(previous, { ...content, data: canonicalJson(content.data), metadata: canonicalJson(content.metadata) });
}

/** What the hash covers, with data and metadata already written as JSON. */
export type ChainJson = Omit<ChainContent, 'data' | 'metadata'> & { data: string; metadata: string };

/**
 * The hash of content whose data and metadata are given as JSON text: equal to `chainHash` when
 * that text is their canonical JSON. The body is laid out in canonicalJson's key order.
 */
export function chainHashOfJson(previous: string, content: ChainJson): string {
  return chainHashOfText(previous, content.id, content.stream, content.revision, content.type, content.created, content.data, content.metadata);
}

/** `chainHashOfJson` with its parts given one by one: the chain check calls it once per event read, without an object for each. */
export function chainHashOfText(previous: string, id: string, stream: string, revision: number, type: string, created: number | undefined, data: string, metadata: string): string {
  const createdMember = created === undefined ? '' : `"created":${JSON.stringify(created)},`;
  // One-shot hashing of the whole text: the same digest as a Hash object fed in parts, without making one per event.
  return digest(
    'sha256',
    `${previous}\n{${createdMember}"data":${data},"id":${JSON.stringify(id)},"metadata":${metadata},"revision":${JSON.stringify(revision)},"stream":${JSON.stringify(stream)},"type":${JSON.stringify(type)}}`,
    'hex',
  );
}

/**
 * Metadata as the embedded store writes it: its canonical JSON with the hash added as the last
 * key. Data is written as its canonical JSON. Read back and parsed, both serialise with plain
 * JSON.stringify to the text that was hashed, which lets verification skip the canonical form
 * (ChainCheck's fast path); the hash itself is still over the canonical form.
 */
export function storedMetadataJson(canonicalMetadata: string, hash: string): string {
  return `${canonicalMetadata.slice(0, -1)}${canonicalMetadata === '{}' ? '' : ','}"hash":${JSON.stringify(hash)}}`;
}

/** The hash an event's metadata carries, or null for an event written before the chain. */
export function hashOf(metadata: EventMetadata | Record<string, unknown>): string | null {
  const hash = (metadata as { hash?: unknown }).hash;
  return typeof hash === 'string' ? hash : null;
}

/** Metadata as it was hashed: without its own hash. */
export function withoutHash(metadata: EventMetadata | Record<string, unknown>): Record<string, unknown> {
  const { hash: _hash, ...rest } = metadata as Record<string, unknown>;
  return rest;
}

/**
 * The stream scope (EventStoreDB): `events`, to be appended at `firstRevision` of `stream` after
 * an event whose hash is `previous` (GENESIS for a new stream or one written before the chain),
 * each with its hash in its metadata.
 */
export function chainForStream(stream: string, firstRevision: number, previous: string, events: NewEvent[]): NewEvent[] {
  let head = previous;
  return events.map((event, index) => {
    const metadata = withoutHash(event.metadata);
    head = chainHash(head, { id: event.id, stream, revision: firstRevision + index, type: event.type, data: event.data, metadata });
    return { ...event, metadata: { ...(metadata as unknown as EventMetadata), hash: head } };
  });
}

/**
 * The canonical JSON of an event's metadata (without its hash), made once per metadata object: the
 * events of one action share one (a create's claims and its record), and nothing changes metadata
 * once built. One per appender, as each keeps its own objects.
 */
export function canonicalMetadataOnce(): (given: EventMetadata) => string {
  const made = new WeakMap<EventMetadata, string>();
  return (given) => {
    let json = made.get(given);
    if (json === undefined) {
      const { hash: _ignored, ...metadata } = given as EventMetadata & { hash?: unknown };
      json = canonicalJson(metadata);
      made.set(given, json);
    }
    return json;
  };
}

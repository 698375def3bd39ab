import { createHash } from 'node:crypto';
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
 * equals the one made from what a store gives back, whatever order it keeps keys in.
 */
export function canonicalJson(value: unknown): string {
  if (value !== null && typeof value === 'object') {
    const json = (value as { toJSON?: () => unknown }).toJSON;
    if (typeof json === 'function') return canonicalJson(json.call(value));
    if (Array.isArray(value)) {
      let out = '[';
      for (let i = 0; i < value.length; i++) {
        if (i > 0) out += ',';
        const item = value[i] as unknown;
        out += item === undefined || typeof item === 'function' ? 'null' : canonicalJson(item);
      }
      return `${out}]`;
    }
    const keys = Object.keys(value).sort();
    let out = '{';
    let first = true;
    for (const key of keys) {
      const item = (value as Record<string, unknown>)[key];
      if (item === undefined || typeof item === 'function') continue;
      out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(item)}`;
      first = false;
    }
    return `${out}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function chainHash(previous: string, content: ChainContent): string {
  const body: ChainContent = {
    id: content.id,
    stream: content.stream,
    revision: content.revision,
    type: content.type,
    data: content.data,
    metadata: content.metadata,
  };
  if (content.created !== undefined) body.created = content.created;
  return createHash('sha256').update(previous).update('\n').update(canonicalJson(body)).digest('hex');
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

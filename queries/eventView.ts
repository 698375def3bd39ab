import type { Actor, EventMetadata, EventSource, StreamEvent } from '../src/eventstore/port.js';

/**
 * How a stored event reads to an auditor. `readableData` is the one place where event data
 * becomes readable values: history, as-of reads and the audit export all go through it, so that
 * decrypting personal fields (and showing them as null once their key is shredded) slots in here.
 */

export function readableData(event: StreamEvent): Record<string, unknown> {
  return event.data;
}

const SOURCES: ReadonlySet<string> = new Set<EventSource>(['app', 'import', 'api', 'automation', 'health score']);

/** The actor as an auditor sees it: events written before 'user' existed say 'cli' for the csr operator. */
export function actorOf(metadata: EventMetadata): Actor {
  const actor = (metadata.actor ?? {}) as Partial<Actor> & { type?: string };
  const type = actor.type === 'apiKey' || actor.type === 'system' ? actor.type : actor.type === 'user' || actor.type === 'cli' ? 'user' : 'system';
  return { type, id: String(actor.id ?? ''), name: String(actor.name ?? '') };
}

export function sourceOf(metadata: EventMetadata): EventSource {
  return SOURCES.has(metadata.source) ? metadata.source : 'app';
}

/** The display text of the spec ("via API · <key name>"): the names are those carried by the event, as they were then. */
export function viaText(metadata: EventMetadata): string {
  const actor = actorOf(metadata);
  switch (sourceOf(metadata)) {
    case 'api':
      return `via API · ${actor.name}`;
    case 'import':
      // csr import names the file as its actor (issue 26).
      return actor.name ? `via import · ${actor.name}` : 'via import';
    case 'automation':
      return actor.name ? `via automation · ${actor.name}` : 'via automation';
    case 'health score':
      return 'via health score';
    case 'app':
      return 'via app';
  }
}

import type { RecordedEvent } from '../eventstore/port.js';

/**
 * The last events opened (decrypted) for the subscribers of one process, by event id, so that the
 * projector, the reactors and the webhook fan-out open each new event once. Bounded by count and
 * by the size of what it holds: an entry keeps both the opened values and the sealed ones, so a
 * run of large records held by count alone kept much of the projector thread's heap alive
 * (docs/performance-log.md, large bodies). Oldest dropped first.
 */
export class OpenedEvents {
  private readonly events = new Map<string, { recordId: string | null; event: RecordedEvent; size: number }>();
  private held = 0;

  constructor(
    private readonly maxEntries = 2_000,
    private readonly maxChars = 4 * 1024 * 1024,
  ) {}

  get(id: string): RecordedEvent | undefined {
    return this.events.get(id)?.event;
  }

  keep(id: string, recordId: string | null, event: RecordedEvent, sealedData: unknown): RecordedEvent {
    const size = approximateChars(event.data) + approximateChars(sealedData);
    this.drop(id);
    this.events.set(id, { recordId, event, size });
    this.held += size;
    while (this.events.size > this.maxEntries || (this.held > this.maxChars && this.events.size > 1)) this.drop(this.events.keys().next().value!);
    return event;
  }

  forget(recordId: string | null): void {
    for (const [id, entry] of this.events) if (entry.recordId === recordId) this.drop(id);
  }

  /** Characters held, for tests. */
  get size(): number {
    return this.held;
  }

  private drop(id: string): void {
    const entry = this.events.get(id);
    if (!entry) return;
    this.events.delete(id);
    this.held -= entry.size;
  }
}

/** About how many characters a JSON-like value holds: its strings' lengths, 8 per other value. */
export function approximateChars(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 8;
  let total = 0;
  if (Array.isArray(value)) for (const item of value) total += approximateChars(item);
  else for (const key in value) total += key.length + approximateChars((value as Record<string, unknown>)[key]);
  return total;
}

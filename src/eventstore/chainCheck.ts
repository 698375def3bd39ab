import { chainHash, GENESIS, hashOf, storedDataOf, withoutHash, type ChainScope } from './chain.js';
import type { RecordedEvent } from './port.js';
import type { Position } from './position.js';

/**
 * Re-checks the audit hash chain (chain.ts) over events fed in log order. Pure: verification and
 * the contract suites use it. The first break is kept; later events are only counted.
 */

export interface ChainBreak {
  position: Position;
  eventId: string;
  stream: string;
  reason: string;
}

export class ChainCheck {
  /** Events written before the chain began (no hash, none chained before them). */
  unchained = 0;
  chained = 0;
  firstBreak: ChainBreak | null = null;
  /** The hash of the last chained event (the head an auditor keeps); GENESIS before any. */
  head = GENESIS;
  /** Log scope: one chain along the whole log. */
  private readonly log = { previous: GENESIS, started: false };
  /** Stream scope: per stream, [previous hash, chain started]. */
  private readonly streams = new Map<string, { previous: string; started: boolean }>();

  constructor(private readonly scope: ChainScope) {}

  add(event: RecordedEvent): void {
    if (this.firstBreak) {
      this.chained += hashOf(event.metadata) === null ? 0 : 1;
      return;
    }
    const state = this.scope === 'log' ? this.log : this.streamState(event.stream);
    const hash = hashOf(event.metadata);
    if (hash === null) {
      if (state.started) return this.broken(event, 'the event carries no hash, but events before it do');
      this.unchained += 1;
      state.previous = GENESIS;
      return;
    }
    const expected = chainHash(state.previous, {
      id: event.id,
      stream: event.stream,
      revision: event.revision,
      type: event.type,
      ...(this.scope === 'log' ? { created: event.created.getTime() } : {}),
      data: storedDataOf(event),
      metadata: withoutHash(event.metadata),
    });
    if (expected !== hash) {
      return this.broken(event, 'its hash does not match its content and the hash before it (edited, removed or reordered)');
    }
    state.started = true;
    state.previous = hash;
    this.chained += 1;
    this.head = hash;
  }

  private streamState(stream: string): { previous: string; started: boolean } {
    let state = this.streams.get(stream);
    if (!state) this.streams.set(stream, (state = { previous: GENESIS, started: false }));
    return state;
  }

  private broken(event: RecordedEvent, reason: string): void {
    this.firstBreak = { position: event.position, eventId: event.id, stream: event.stream, reason };
  }
}

import type { EventStore } from '../src/eventstore/port.js';
import { parsePosition, type Position } from '../src/eventstore/position.js';

/** What a rebuild reports about once a second: for the CLI's bar or JSON lines, and the server's log. */
export interface RebuildProgress {
  generation: number;
  phase: 'building' | 'done';
  /** Events applied so far by this run. */
  events: number;
  checkpoint: Position | null;
  head: Position | null;
  /** Share of the log (by position) behind the checkpoint, 0 to 1. */
  fraction: number;
  eventsPerSecond: number;
  /** Seconds left at the current rate; null when unknown. */
  etaSeconds: number | null;
}

const EVERY_MS = 1000;

/** Positions are ordered numbers on every backend (sequence on SQLite, byte offset on EventStoreDB), so their ratio measures progress. */
function fractionOf(checkpoint: Position | null, head: Position | null): number {
  if (head === null) return 1;
  if (checkpoint === null) return 0;
  const done = Number(parsePosition(checkpoint).commit);
  const total = Number(parsePosition(head).commit);
  return total <= 0 ? 1 : Math.min(1, done / total);
}

export function logProgress(events: EventStore, generation: number, onProgress?: (progress: RebuildProgress) => void) {
  const started = performance.now();
  // The first batch reports at once, however young the process (performance.now counts from its start).
  let last = Number.NEGATIVE_INFINITY;
  /** Where this run started (a resumed rebuild does not start at 0), for the ETA. */
  let first: number | null = null;
  return {
    async report(done: number, checkpoint: Position | null, phase: RebuildProgress['phase'], force = false): Promise<void> {
      if (!onProgress) return;
      const now = performance.now();
      if (!force && now - last < EVERY_MS) return;
      last = now;
      const head = await events.headPosition();
      const fraction = phase === 'done' ? 1 : fractionOf(checkpoint, head);
      first ??= done > 0 ? Math.max(0, fraction - done / Math.max(1, Number(head === null ? 1 : parsePosition(head).commit))) : fraction;
      const seconds = (now - started) / 1000;
      const eventsPerSecond = Math.round(done / Math.max(seconds, 0.001));
      const covered = fraction - first;
      const etaSeconds = phase === 'done' ? 0 : covered > 0 && fraction < 1 ? Math.round((seconds * (1 - fraction)) / covered) : null;
      onProgress({ generation, phase, events: done, checkpoint, head, fraction, eventsPerSecond, etaSeconds });
    },
  };
}

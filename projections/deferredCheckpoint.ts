import type { Logger } from 'pino';
import { hasReached, type Position } from '../src/eventstore/position.js';
import type { ReadStore } from '../src/readstore/port.js';

/**
 * A reactor's checkpoint for batches that appended nothing and that no writer waits for: kept in
 * memory and committed with the next batch that must commit, after `delayMs`, or at stop.
 *
 * Such a commit wrote one row and woke every thread waiting on any checkpoint, for a batch whose
 * only outcome was "nothing to do". Committing it later changes what a restart replays, not what
 * the reactor did: after a crash the batches since the committed checkpoint are reacted to again,
 * and every reaction is idempotent (projection.ts), as for a crash between a reaction and its
 * checkpoint. `delayMs` is well below status's live bound, so a reactor at rest shows as live.
 */
export class DeferredCheckpoint {
  private pending: Position | null = null;
  private timer: NodeJS.Timeout | null = null;
  private committing: Promise<void> = Promise.resolve();

  constructor(
    private readonly readStore: ReadStore,
    private readonly name: string,
    private readonly delayMs: number,
    private readonly logger: Logger,
  ) {}

  /** The batch up to `position` is done; its checkpoint may wait. */
  defer(position: Position): void {
    this.pending = position;
    if (this.timer) return;
    this.timer = setTimeout(() => void this.flush(), this.delayMs);
    this.timer.unref();
  }

  /** A later commit holds a newer checkpoint, or the runner resumes from the committed one: nothing to write. */
  drop(): void {
    this.pending = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Writes the kept checkpoint now (timer, stop); a failure keeps it for the next batch or stop. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const position = this.pending;
    if (position === null) return this.committing;
    this.pending = null;
    // Never behind a newer checkpoint the runner committed meanwhile.
    const write = this.readStore.transaction(async (tx) => {
      if (!hasReached(await tx.checkpoint(this.name), position)) await tx.setCheckpoint(this.name, position);
    });
    const written = write.catch((error: unknown) => {
      this.pending ??= position;
      this.logger.debug({ err: error }, 'reactor checkpoint not written; kept for later');
    });
    this.committing = Promise.all([this.committing, written]).then(() => undefined);
    return this.committing;
  }
}

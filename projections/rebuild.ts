import { hostname } from 'node:os';
import { processAlive } from '../src/core/processAlive.js';
import pino, { type Logger } from 'pino';
import type { EventStore, RecordedEvent } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { readyBatches } from '../src/eventstore/readyBatches.js';
import type { ReadStore, ReadTransaction } from '../src/readstore/port.js';
import { logProgress, type RebuildProgress } from './rebuildProgress.js';
import { eventsUpTo, IDLE_MS } from './logRange.js';
import type { Projection } from './projection.js';
import { StatusReporter } from './runnerStatus.js';
import { BatchOverlay } from './batchOverlay.js';

/**
 * The one rebuild machinery (manual `csr projections rebuild`, a new projection version at start,
 * every backend): a new generation of the read model is filled from the start of the log beside
 * the live one, by the projection's own `apply`, in large batches (one transaction per batch, never
 * per event), while the live projector keeps the live generation current. The rebuild never goes
 * past the live checkpoint; once it has reached it, `promoteGeneration` applies the few events the
 * live projector has committed since, and switches reads, in one transaction.
 *
 * Its checkpoint commits with each batch: killed at any moment, the live generation serves on and
 * the next rebuild of the same version resumes from that checkpoint.
 */

const BATCH = 2_000;
/** Readers that looked up the old generation just before the switch finish within this. */
const DROP_GRACE_MS = 500;

export interface RebuildOptions {
  /** Start over even if a rebuild of this version was left halfway. */
  restart?: boolean;
  onProgress?(progress: RebuildProgress): void;
  /** Stops the rebuild between batches (it resumes from its checkpoint next time). */
  signal?: AbortSignal;
}

export interface RebuildResult {
  projection: string;
  version: number;
  generation: number;
  resumed: boolean;
  /** Events applied by this run (a resumed run counts only its own). */
  events: number;
  seconds: number;
  eventsPerSecond: number;
  checkpoint: Position | null;
}

/** Who builds: this process on this machine. */
export function builderId(): string {
  return `${hostname()}:${process.pid}`;
}

/** A builder on this machine is alive while its process is (a zombie is dead); one elsewhere is assumed alive (take over with --restart). */
export function builderAlive(owner: string): boolean {
  const at = owner.lastIndexOf(':');
  const pid = Number(owner.slice(at + 1));
  if (owner.slice(0, at) !== hostname() || !Number.isSafeInteger(pid)) return owner !== '';
  if (pid === process.pid) return false;
  return processAlive(pid);
}

const IDLE = Symbol('idle');
const idle = () => new Promise<typeof IDLE>((resolve) => setTimeout(resolve, IDLE_MS, IDLE));

/** The projection's own apply over a batch overlay: one write per record changed, not one per event. */
async function applyBatch(tx: ReadTransaction, projection: Projection, batch: RecordedEvent[]): Promise<void> {
  const overlay = new BatchOverlay(tx);
  await projection.apply(overlay, batch);
  await overlay.flush();
  await tx.setCheckpoint(projection.name, batch.at(-1)!.position);
}

export async function rebuildReadModel(
  deps: { events: EventStore; readStore: ReadStore; logger?: Logger },
  projection: Projection,
  options: RebuildOptions = {},
): Promise<RebuildResult> {
  if (projection.kind !== 'read-model') throw new Error(`${projection.name} is a reactor: it keeps no read model to rebuild`);
  const { events, readStore } = deps;
  const started = performance.now();
  const begun = await readStore.beginGeneration({
    version: String(projection.version),
    owner: builderId(),
    restart: options.restart ?? false,
    ownerAlive: builderAlive,
  });
  const { generation } = begun;
  // `csr projections status` shows the rebuild's rate and error as it does a runner's.
  const status = new StatusReporter(readStore, `${projection.name}#rebuild`, deps.logger ?? pino({ level: 'silent' }));
  try {
    return await build();
  } catch (error) {
    // Stopped with the server is no failure: the next start resumes it.
    if (!options.signal?.aborted) status.failed(error);
    throw error;
  } finally {
    await status.stop();
  }

  async function build(): Promise<RebuildResult> {
    let position = begun.position;
    let done = 0;
    const progress = logProgress(events, generation, options.onProgress);

    const subscription = events.subscribeToAll({ from: position ?? 'start', filter: projection.filter });
    const batches = readyBatches(subscription, BATCH)[Symbol.asyncIterator]();
    let pending = batches.next();
    let carried: RecordedEvent[] = [];
    try {
      for (;;) {
        options.signal?.throwIfAborted();
        const live = await readStore.checkpoint(projection.name);
        if (carried.length === 0) {
          const next = await Promise.race([pending, idle()]);
          if (next === IDLE) {
            if (live === null || (position !== null && position >= live)) break;
            continue;
          }
          if (next.done) break;
          carried = next.value;
          pending = batches.next();
        }
        const beyond = carried.findIndex((event) => live === null || event.position > live);
        const ready = beyond === -1 ? carried : carried.slice(0, beyond);
        if (ready.length === 0) break;
        carried = carried.slice(ready.length);
        await readStore.transaction((tx) => applyBatch(tx, projection, ready), { generation });
        position = ready.at(-1)!.position;
        done += ready.length;
        status.applied(ready.length);
        await progress.report(done, position, 'building');
        // At the live checkpoint: the switch applies whatever the live projector did since.
        if (live !== null && position >= live) break;
      }
    } finally {
      pending.catch(() => undefined);
      await subscription.close();
    }

    options.signal?.throwIfAborted();
    await readStore.promoteGeneration(generation, projection.name, async (tx, from, to) => {
      const caughtUp = await eventsBetween(events, projection, from, to);
      if (caughtUp.length > 0) await applyBatch(tx, projection, caughtUp);
      done += caughtUp.length;
    });
    await new Promise((resolve) => setTimeout(resolve, DROP_GRACE_MS));
    await readStore.dropUnusedGenerations();
    const checkpoint = await readStore.checkpoint(projection.name);
    await progress.report(done, checkpoint, 'done', true);
    const seconds = (performance.now() - started) / 1000;
    return {
      projection: projection.name,
      version: projection.version,
      generation,
      resumed: begun.resumed,
      events: done,
      seconds: Math.round(seconds * 1000) / 1000,
      eventsPerSecond: Math.round(done / Math.max(seconds, 0.001)),
      checkpoint,
    };
  }
}

/** The projection's events after `from` up to and including `to` (few: what the live projector did since the last batch). */
async function eventsBetween(events: EventStore, projection: Projection, from: Position | null, to: Position): Promise<RecordedEvent[]> {
  const found: RecordedEvent[] = [];
  for await (const event of eventsUpTo(events, from, projection.filter, to)) found.push(event);
  return found;
}

import type { EventStore } from '../src/eventstore/port.js';
import { parsePosition, type Position } from '../src/eventstore/position.js';
import type { BuildingGeneration, ReadStore } from '../src/readstore/port.js';
import { logProgress, type RebuildProgress } from './rebuildProgress.js';

/**
 * `csr projections rebuild --wait` beside a rebuild that another process runs: instead of a second
 * builder (the read store allows one), follow that one from the read store alone, reporting its
 * progress as a rebuild of our own would, until its generation is promoted (success) or it stops
 * without being promoted (its process died, or a `--restart` dropped it).
 */

const POLL_MS = 500;

export interface FollowedRebuild {
  generation: number;
  /** Who built it (`host:pid`). */
  followed: string;
  checkpoint: Position | null;
}

/** Why a followed rebuild ended without its generation going live. */
export class FollowedRebuildStopped extends Error {}

export async function followRebuild(
  deps: { events: EventStore; readStore: ReadStore },
  building: BuildingGeneration,
  options: { projection: string; alive(owner: string): boolean; onProgress?(progress: RebuildProgress): void; pollMs?: number },
): Promise<FollowedRebuild> {
  const { events, readStore } = deps;
  const progress = logProgress(events, building.generation, options.onProgress);
  // Positions are ordered numbers: how far it moved while we follow stands for the events it applied.
  const commit = (position: Position | null) => (position === null ? 0 : Number(parsePosition(position).commit));
  const from = commit(building.position);
  await progress.report(0, building.position, 'building', true);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? POLL_MS));
    const now = await readStore.generations();
    if (now.building?.generation === building.generation) {
      if (!options.alive(now.building.owner)) {
        throw new FollowedRebuildStopped(`the rebuild by ${now.building.owner} stopped before it finished (its process is gone)`);
      }
      await progress.report(Math.max(0, commit(now.building.position) - from), now.building.position, 'building');
      continue;
    }
    if (now.live !== building.generation) throw new FollowedRebuildStopped(`the rebuild by ${building.owner} stopped before it finished (its generation was dropped)`);
    const checkpoint = await readStore.checkpoint(options.projection);
    await progress.report(Math.max(0, commit(checkpoint) - from), checkpoint, 'done', true);
    return { generation: building.generation, followed: building.owner, checkpoint };
  }
}

import { statfs } from 'node:fs/promises';
import type { ReadinessCheck } from '../core/readiness.js';
import type { EventStore } from '../eventstore/port.js';
import { RECORDS_PROJECTION, type ReadStore } from '../readstore/port.js';
import type { SetupStore } from '../setup/port.js';

/** The stores answer, and DATA_DIR's disk has room (the embedded store). */

/** Below this much free space the embedded store is about to answer 507: not ready. */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;

/** The stores a ready API answers from (the backends src/backends.ts opened, seen through their ports). */
export interface ReadinessStores {
  events: EventStore;
  readStore: ReadStore;
  setup: SetupStore;
}

export function storesCheck(backends: ReadinessStores): ReadinessCheck {
  return {
    name: 'stores',
    async check() {
      try {
        await Promise.all([backends.events.headPosition(), backends.readStore.checkpoint(RECORDS_PROJECTION), backends.setup.workspaceById('00000000-0000-4000-8000-000000000000')]);
        return null;
      } catch (error) {
        return `a store does not answer: ${error instanceof Error ? error.message : String(error)}`;
      }
    },
  };
}

export function diskCheck(dataDir: string, minFreeBytes = MIN_FREE_BYTES): ReadinessCheck {
  return {
    name: 'disk',
    async check() {
      const stats = await statfs(dataDir);
      const free = stats.bavail * stats.bsize;
      return free >= minFreeBytes ? null : `only ${Math.round(free / 1024 / 1024)} MiB free for the data directory`;
    },
  };
}

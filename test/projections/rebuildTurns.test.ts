import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Projection } from '../../projections/projection.js';
import { rebuildReadModel } from '../../projections/rebuild.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';
import { expectTurnsBetweenBatches, seedLog, turnCounter, type SeenBatch } from '../support/turns.js';

/**
 * A rebuild's building loop lets the event loop turn between its batches. Its reads, apply and
 * writes all settle as promise jobs: without a turn, no timer or immediate ran until the whole
 * log was built, and the immediates pending (one per event read, from readyBatches) kept every
 * event reachable, so the heap grew with the log.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-rebuild-turns-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rebuildReadModel', () => {
  it('lets the event loop turn between two batches of the building loop', async () => {
    const events = openSqliteEventStore({ path: join(dir, 'events.db') });
    const readStore = openSqliteReadStore({ path: join(dir, 'read.db') });
    try {
      await seedLog(events, 30, 200);
      const head = (await events.headPosition())!;
      await readStore.transaction((tx) => tx.setCheckpoint('turns', head));

      const counter = turnCounter();
      const seen: SeenBatch[] = [];
      const projection: Projection = {
        name: 'turns',
        version: 2,
        kind: 'read-model',
        filter: { streamPrefixes: ['record-'] },
        async apply(_tx, batch) {
          seen.push({ turns: counter.turns(), events: batch.length });
        },
      };
      const result = await rebuildReadModel({ events, readStore }, projection);
      counter.stop();

      expect(result.events).toBe(6_000);
      expectTurnsBetweenBatches(seen);
    } finally {
      await readStore.close();
      await events.close();
    }
  });
});

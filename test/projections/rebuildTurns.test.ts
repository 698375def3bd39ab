import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Projection } from '../../projections/projection.js';
import { rebuildReadModel } from '../../projections/rebuild.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';

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
      for (let stream = 0; stream < 30; stream++) {
        const batch = Array.from({ length: 200 }, (_, n) => ({ id: crypto.randomUUID(), type: 'Noted', data: { n }, metadata: { source: 'api' as const, actor: { type: 'system' as const, id: 't', name: 't' }, actionId: 'a', correlationId: 'a', causationId: 'a' } }));
        await events.append(`record-${stream}`, batch, { expectedRevision: 'no_stream' });
      }
      const head = (await events.headPosition())!;
      await readStore.transaction((tx) => tx.setCheckpoint('turns', head));

      let turns = 0;
      let spinning = true;
      const spin = () => {
        turns++;
        if (spinning) setImmediate(spin);
      };
      setImmediate(spin);
      const seen: { turns: number; events: number }[] = [];
      const projection: Projection = {
        name: 'turns',
        version: 2,
        kind: 'read-model',
        filter: { streamPrefixes: ['record-'] },
        async apply(_tx, batch) {
          seen.push({ turns, events: batch.length });
        },
      };
      const result = await rebuildReadModel({ events, readStore }, projection);
      spinning = false;

      expect(result.events).toBe(6_000);
      // Full batches (the log was all there): a turn came between each two.
      const building = seen.filter((batch) => batch.events > 1);
      expect(building.length).toBeGreaterThanOrEqual(3);
      for (let at = 1; at < building.length; at++) expect(building[at]!.turns).toBeGreaterThan(building[at - 1]!.turns);
    } finally {
      await readStore.close();
      await events.close();
    }
  });
});

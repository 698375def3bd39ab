import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, it } from 'vitest';
import type { Projection } from '../../projections/projection.js';
import { startProjection } from '../../projections/runner.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';
import { expectTurnsBetweenBatches, seedLog, turnCounter, type SeenBatch } from '../support/turns.js';

/**
 * The live projector catching up (a fresh read model, or one behind after a restart) lets the
 * event loop turn between its batches. Its reads, apply and writes all settle as promise jobs:
 * without a turn no timer, message or immediate of its thread ran until it reached the head.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-runner-turns-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('startProjection', () => {
  it('lets the event loop turn between two batches while catching up', async () => {
    const events = openSqliteEventStore({ path: join(dir, 'events.db') });
    const readStore = openSqliteReadStore({ path: join(dir, 'read.db') });
    try {
      // Given a log of 3,000 events, six batches of the runner's largest size.
      await seedLog(events, 15, 200);
      const counter = turnCounter();
      const seen: SeenBatch[] = [];
      let caughtUp: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (caughtUp = resolve));
      let applied = 0;
      const projection: Projection = {
        name: 'turns',
        version: 1,
        kind: 'read-model',
        filter: { streamPrefixes: ['record-'] },
        async apply(_tx, batch) {
          seen.push({ turns: counter.turns(), events: batch.length });
          applied += batch.length;
          if (applied === 3_000) caughtUp();
        },
      };

      // When the projection runs from an empty read model
      const running = startProjection({ events, readStore, logger: pino({ level: 'silent' }) }, projection);
      await done;
      counter.stop();
      await running.stop();

      // Then a turn of the event loop came between each two full batches.
      expectTurnsBetweenBatches(seen);
    } finally {
      await readStore.close();
      await events.close();
    }
  });
});

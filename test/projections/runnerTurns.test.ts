import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { Projection } from '../../projections/projection.js';
import { startProjection } from '../../projections/runner.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';

/**
 * The live projector catching up (a fresh read model, or one behind after a restart) lets the
 * event loop turn between its batches. Its reads, apply and writes all settle as promise jobs:
 * without a turn no timer, message or immediate of its thread ran until it reached the head.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-runner-turns-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const metadata = { source: 'api' as const, actor: { type: 'system' as const, id: 't', name: 't' }, actionId: 'a', correlationId: 'a', causationId: 'a' };

describe('startProjection', () => {
  it('lets the event loop turn between two batches while catching up', async () => {
    const events = openSqliteEventStore({ path: join(dir, 'events.db') });
    const readStore = openSqliteReadStore({ path: join(dir, 'read.db') });
    try {
      // Given a log of 3,000 events, six batches of the runner's largest size.
      for (let stream = 0; stream < 15; stream++) {
        const batch = Array.from({ length: 200 }, (_, n) => ({ id: crypto.randomUUID(), type: 'Noted', data: { n }, metadata }));
        await events.append(`record-${stream}`, batch, { expectedRevision: 'no_stream' });
      }
      let turns = 0;
      let spinning = true;
      const spin = () => {
        turns++;
        if (spinning) setImmediate(spin);
      };
      setImmediate(spin);
      const seen: { turns: number; events: number }[] = [];
      let caughtUp: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (caughtUp = resolve));
      let applied = 0;
      const projection: Projection = {
        name: 'turns',
        version: 1,
        kind: 'read-model',
        filter: { streamPrefixes: ['record-'] },
        async apply(_tx, batch) {
          seen.push({ turns, events: batch.length });
          applied += batch.length;
          if (applied === 3_000) caughtUp();
        },
      };

      // When the projection runs from an empty read model
      const running = startProjection({ events, readStore, logger: pino({ level: 'silent' }) }, projection);
      await done;
      spinning = false;
      await running.stop();

      // Then a turn of the event loop came between each two full batches.
      const full = seen.filter((batch) => batch.events > 1);
      expect(full.length).toBeGreaterThanOrEqual(3);
      for (let at = 1; at < full.length; at++) expect(full[at]!.turns).toBeGreaterThan(full[at - 1]!.turns);
    } finally {
      await readStore.close();
      await events.close();
    }
  });
});

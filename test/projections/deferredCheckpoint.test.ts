import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { Projection } from '../../projections/projection.js';
import { mayBeAwaited } from '../../projections/rollupReactor.js';
import { startProjection } from '../../projections/runner.js';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';
import { seedLog } from '../support/turns.js';

/**
 * A reactor's batch that appended nothing and that no writer waits for keeps its checkpoint in
 * memory for a moment (projections/deferredCheckpoint.ts): written within a second, with the next
 * batch that must commit, or at stop. A batch a writer may wait for commits at once.
 */

const dir = mkdtempSync(join(tmpdir(), 'csr-deferred-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function withStores(name: string, run: (stores: { events: ReturnType<typeof openSqliteEventStore>; readStore: ReturnType<typeof openSqliteReadStore> }) => Promise<void>) {
  const events = openSqliteEventStore({ path: join(dir, `${name}-events.db`) });
  const readStore = openSqliteReadStore({ path: join(dir, `${name}-read.db`) });
  try {
    await run({ events, readStore });
  } finally {
    await readStore.close();
    await events.close();
  }
}

/** A reactor that reacts to nothing; `seen` resolves once it has been handed `count` events. */
function idleReactor(awaited: boolean) {
  let seen = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  const projection: Projection = {
    name: `idle-${awaited}`,
    version: 1,
    kind: 'reactor',
    filter: { streamPrefixes: ['record-'] },
    async apply() {},
    async react(batch: RecordedEvent[]) {
      seen += batch.length;
      for (const wait of waiting.filter((w) => seen >= w.count)) wait.resolve();
    },
    awaited: () => awaited,
  };
  const reacted = (count: number) => new Promise<void>((resolve) => (seen >= count ? resolve() : waiting.push({ count, resolve })));
  return { projection, reacted };
}

const silent = pino({ level: 'silent' });
const metadata = { source: 'api' as const, actor: { type: 'system' as const, id: 't', name: 't' }, actionId: 'a', correlationId: 'a', causationId: 'a' };

describe('a reactor checkpoint for batches that did nothing', () => {
  it('is written within a second when no writer waits for it, and at stop', async () => {
    await withStores('deferred', async ({ events, readStore }) => {
      await seedLog(events, 1, 10);
      const head = (await events.headPosition())!;
      const { projection, reacted } = idleReactor(false);
      const running = startProjection({ events, readStore, logger: silent }, projection);
      try {
        await reacted(10);
        const reactedAt = performance.now();
        // Not at once: nobody waits for it. A machine that paused this process for most of the
        // runner's second may see it written within the 300 ms, but never before that second.
        if (await readStore.waitForCheckpoint(projection.name, head, 300)) expect(performance.now() - reactedAt).toBeGreaterThanOrEqual(900);
        // But soon (the runner's delay is a second), so that status shows the reactor live and a
        // restart replays little; looked for long enough for a loaded machine, well before any stop.
        expect(await readStore.waitForCheckpoint(projection.name, head, 10_000)).toBe(true);

        await events.append('record-later', [{ id: crypto.randomUUID(), type: 'Noted', data: {}, metadata }], { expectedRevision: 'no_stream' });
      } finally {
        const later = (await events.headPosition())!;
        await reacted(11);
        // The runner keeps the batch's checkpoint once `react` has returned (well before the timer).
        await new Promise((resolve) => setTimeout(resolve, 50));
        await running.stop();
        // A stop writes what was kept.
        expect(await readStore.checkpoint(projection.name)).toBe(later);
      }
    });
  });

  it('is committed at once when a writer may wait for the reactor', async () => {
    await withStores('awaited', async ({ events, readStore }) => {
      await seedLog(events, 1, 10);
      const head = (await events.headPosition())!;
      const { projection, reacted } = idleReactor(true);
      const running = startProjection({ events, readStore, logger: silent }, projection);
      try {
        await reacted(10);
        // At once: before the second a deferred checkpoint waits (300 ms left a loaded machine little room).
        expect(await readStore.waitForCheckpoint(projection.name, head, 900)).toBe(true);
      } finally {
        await running.stop();
      }
    });
  });
});

describe('mayBeAwaited (the roll-up reactor)', () => {
  const event = (type: string, object: string, data: Record<string, unknown> = {}) => ({ type, data: { object, ...data } }) as unknown as RecordedEvent;
  it.each([
    ['a client created without a looked-up value', event('RecordCreated', 'clients', { fields: { name: 'Acme', healthScore: 85 } }), false],
    ['a client created with a looked-up value', event('RecordCreated', 'clients', { fields: { name: 'Acme', health: 'Good' } }), true],
    ['a client updated (the values held before are not in the event)', event('RecordUpdated', 'clients', { changes: { name: { from: 'a', to: 'b' } } }), true],
    ['a client deleted', event('RecordDeleted', 'clients', { fields: {} }), true],
    ['an invoice line created (rolled up into its invoice)', event('RecordCreated', 'invoiceLines', { fields: {} }), true],
    ['a roll-up change (the reactor waits level by level)', event('RecordRollupsChanged', 'playbooks', { rollups: {} }), true],
    ['a contact created (feeds no roll-up)', event('RecordCreated', 'contacts', { fields: { client: 'x' } }), false],
    ['a meeting updated (feeds no roll-up)', event('RecordUpdated', 'meetings', { changes: {} }), false],
  ])('%s: %s', (_name, given, expected) => {
    expect(mayBeAwaited(given)).toBe(expected);
  });
});

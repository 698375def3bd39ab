import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { projectionLagCheck } from '../../projections/health.js';
import type { Projection } from '../../projections/projection.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import type { EventStore, SubscribeToAllOptions } from '../../src/eventstore/port.js';
import type { Position } from '../../src/eventstore/position.js';
import type { ReadStore } from '../../src/readstore/port.js';
import { newEvent } from '../contract/eventstore.contract.js';

/**
 * /health/ready's projection check on a real (embedded) log: a projection whose filter matches
 * rarely keeps an old checkpoint, and every probe used to read the log from that checkpoint to the
 * head again (on EventStoreDB a filtered scan on the server, every few seconds, in every process).
 * A probe now reads only what it has not read for the same checkpoint, and still sees what is new.
 */

const folders: string[] = [];
const stores: EventStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** The log, with every catch-up read's start position recorded. */
function countedLog(): { events: EventStore; reads: (Position | 'start')[] } {
  const folder = mkdtempSync(join(tmpdir(), 'csr-probe-'));
  folders.push(folder);
  const stored = openSqliteEventStore({ path: join(folder, 'events.db') });
  stores.push(stored);
  const reads: (Position | 'start')[] = [];
  const events = Object.create(stored) as EventStore;
  events.subscribeToAll = (options: SubscribeToAllOptions) => {
    reads.push(options.from);
    return stored.subscribeToAll(options);
  };
  events.headPosition = () => stored.headPosition();
  return { events, reads };
}

const rare = { name: 'rare', filter: { streamPrefixes: ['rare-'] } } as unknown as Projection;

describe('the readiness probe of projections', () => {
  it('reads a stretch of the log once per checkpoint, and still sees a new unapplied event', async () => {
    const { events, reads } = countedLog();
    const applied = await events.append('rare-1', [newEvent()], { expectedRevision: 'no_stream' });
    for (let index = 0; index < 50; index++) await events.append(`other-${index}`, [newEvent()], { expectedRevision: 'no_stream' });
    const readStore = { checkpoint: async () => applied.position, runnerStatuses: async () => [] } as unknown as ReadStore;
    const check = projectionLagCheck({ events, readStore }, [rare], 60_000);

    expect(await check.check()).toBeNull();
    expect(reads).toEqual([applied.position]);
    const head = await events.headPosition();
    expect(await check.check()).toBeNull();
    // Nothing was appended: the probe reads no log at all (before, it read from the checkpoint again).
    expect(reads).toEqual([applied.position]);

    await events.append('rare-2', [newEvent()], { expectedRevision: 'no_stream' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    // The new event is read from the head the last probe reached, and found.
    const strict = projectionLagCheck({ events, readStore }, [rare], 0);
    expect(await strict.check()).toMatch(/^rare is 1 events \(\d+ s\) behind the log$/);
    expect(await check.check()).toBeNull(); // younger than 60 s
    expect(reads.at(-1)).toBe(head);
  });

  it('once an unapplied event is found, the next probes read no log until the checkpoint moves', async () => {
    const { events, reads } = countedLog();
    const applied = await events.append('rare-1', [newEvent()], { expectedRevision: 'no_stream' });
    const pending = await events.append('rare-2', [newEvent()], { expectedRevision: 'no_stream' });
    let checkpoint: Position = applied.position;
    const readStore = { checkpoint: async () => checkpoint, runnerStatuses: async () => [] } as unknown as ReadStore;
    const check = projectionLagCheck({ events, readStore }, [rare], 0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await check.check()).not.toBeNull();
    expect(await check.check()).not.toBeNull();
    expect(reads).toEqual([applied.position]);
    // Applied: the checkpoint reached the head, nothing is left to read.
    checkpoint = pending.position;
    expect(await check.check()).toBeNull();
    expect(reads).toEqual([applied.position]);
  });
});

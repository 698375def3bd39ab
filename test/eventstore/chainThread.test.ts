import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChainCheck } from '../../src/eventstore/chainCheck.js';
import type { EventStore, NewEvent, RecordedEvent } from '../../src/eventstore/port.js';
import { chainThreadFits as fitsFromSources } from '../../src/eventstore/sqlite/chainOnThread.js';
import { openSqliteFile } from '../../src/sqlite/file.js';

/**
 * The embedded store's chain check on a thread of its own (chainOnThread.ts). The thread runs the
 * compiled script, so these tests load the build (dist/, made by test/globalSetup.ts): from the
 * sources vitest runs, the store checks on the calling thread.
 */

type ChainThreadModule = typeof import('../../src/eventstore/sqlite/chainOnThread.js');
type StoreModule = typeof import('../../src/eventstore/sqlite/index.js');
const built = async <T>(path: string): Promise<T> => (await import(new URL(`../../dist/src/eventstore/sqlite/${path}`, import.meta.url).href)) as T;

const metadata = { source: 'api' as const, actor: { type: 'apiKey' as const, id: 'k', name: 'Key' }, actionId: 'a', correlationId: 'a', causationId: 'a' };
const newEvent = (n: number): NewEvent => ({ id: randomUUID(), type: 'Happened', data: { n, text: `event ${n}` }, metadata });

/** The chain as ChainCheck finds it over the events read in log order (what the thread must answer). */
async function expectedReport(store: EventStore) {
  const check = new ChainCheck(store.chainScope);
  let events = 0;
  for (let from: RecordedEvent['position'] | 'start' = 'start'; ; ) {
    const page = await store.readAll({ from, maxCount: 1000 });
    if (page.length === 0) break;
    for (const event of page) check.add(event);
    events += page.length;
    from = page.at(-1)!.position;
  }
  return check.report(events);
}

describe('the chain check on a thread of its own (embedded store)', () => {
  let dir: string;
  let path: string;
  let store: EventStore;
  let thread: ChainThreadModule;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'csr-chain-thread-'));
    path = join(dir, 'events.db');
    thread = await built<ChainThreadModule>('chainOnThread.js');
    store = (await built<StoreModule>('index.js')).openSqliteEventStore({ path });
    // Several pages of the check (500 rows each), over many streams.
    for (let n = 0; n < 4500; n += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, i) => store.append(`s-${(n + i) % 37}`, [newEvent(n + i)], { expectedRevision: 'any' })));
    }
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is chosen for a file with two cores or more and a compiled thread script, not otherwise', () => {
    expect(thread.chainThreadFits(path, 2)).toBe(true);
    expect(thread.chainThreadFits(path, 1)).toBe(false);
    expect(thread.chainThreadFits(':memory:', 4)).toBe(false);
    // The sources run untranslated: no thread script beside them.
    expect(fitsFromSources(path, 4)).toBe(false);
  });

  it('answers what ChainCheck finds over the log, with progress a page at a time', async () => {
    const until = (await store.headPosition())!;
    const progress: number[] = [];
    const report = await thread.checkChainOnThread({ path, until: Number(until.split(':')[0]) }, (events) => progress.push(events), new Set());
    expect(report).toEqual(await expectedReport(store));
    expect(report).toMatchObject({ events: 4500, chained: 4500, firstBreak: null });
    expect(progress).toEqual([500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500]);
    // The store's own checkChain gives the same (on the thread where two cores exist).
    expect(await store.checkChain({ until })).toEqual(report);
  });

  it('reports the exact first broken event of a log edited by hand (data, then metadata alone), and still counts the rest', async () => {
    const events: RecordedEvent[] = [];
    for (let from: RecordedEvent['position'] | 'start' = 'start'; ; ) {
      const page = await store.readAll({ from, maxCount: 1000 });
      if (page.length === 0) break;
      events.push(...page);
      from = page.at(-1)!.position;
    }
    const [edited, later] = [events[2345]!, events[3999]!];
    const db = openSqliteFile(path, { synchronous: 'FULL' });
    db.prepare('UPDATE events SET data = ? WHERE id = ?').run(JSON.stringify({ n: 999_999, text: 'changed' }), edited.id);
    db.prepare('UPDATE events SET data = ? WHERE id = ?').run(JSON.stringify({ n: -1, text: 'changed too' }), later.id);
    db.close();

    const until = (await store.headPosition())!;
    const report = await thread.checkChainOnThread({ path, until: Number(until.split(':')[0]) }, undefined, new Set());
    expect(report.firstBreak).toEqual({ position: edited.position, eventId: edited.id, stream: edited.stream, reason: expect.stringContaining('does not match') });
    expect(report).toEqual(await expectedReport(store));
    expect(await store.checkChain({ until })).toEqual(report);

    // Metadata alone edited (who made the change), earlier in the log: the break moves there.
    const renamed = events[1000]!;
    const file = openSqliteFile(path, { synchronous: 'FULL' });
    file.prepare("UPDATE events SET metadata = json_set(metadata, '$.actor.name', 'Someone else') WHERE id = ?").run(renamed.id);
    file.close();
    const again = await thread.checkChainOnThread({ path, until: Number(until.split(':')[0]) }, undefined, new Set());
    expect(again.firstBreak).toMatchObject({ position: renamed.position, eventId: renamed.id });
    expect(again).toEqual(await expectedReport(store));
  });

  it('ends with the store: a check still running when it closes rejects, and its thread stops', async () => {
    const running = new Set<import('node:worker_threads').Worker>();
    const until = Number((await store.headPosition())!.split(':')[0]);
    const pending = thread.checkChainOnThread({ path, until }, undefined, running);
    expect(running.size).toBe(1);
    await Promise.all([...running].map((worker) => worker.terminate()));
    await expect(pending).rejects.toThrow(/stopped before its report/);
    expect(running.size).toBe(0);

    const checking = store.checkChain({ until: (await store.headPosition())! });
    await store.close();
    await expect(checking).rejects.toThrow();
  });
});

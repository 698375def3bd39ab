import { afterEach, describe, expect, it, vi } from 'vitest';
import { logProgress, type RebuildProgress } from '../../projections/rebuildProgress.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { formatPosition } from '../../src/eventstore/position.js';

/** The rebuild's progress lines: the first batch at once, then about one a second, and the last always. */

const head = formatPosition(1000n);
const events = { headPosition: async () => head } as unknown as EventStore;
const at = (commit: number) => formatPosition(BigInt(commit));

afterEach(() => vi.restoreAllMocks());

describe('logProgress', () => {
  it.each([
    // given the process is this old (ms) when the rebuild starts, when the first batch reports: it is shown
    [200],
    [5_000],
  ])('given a process %i ms old, the first batch is reported at once', async (age) => {
    const now = vi.spyOn(performance, 'now').mockReturnValue(age);
    const seen: RebuildProgress[] = [];
    const progress = logProgress(events, 2, (line) => seen.push(line));
    now.mockReturnValue(age + 50);
    await progress.report(100, at(100), 'building');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ generation: 2, phase: 'building', events: 100, fraction: 0.1 });
  });

  it('then reports at most once a second, and the last line whenever it comes', async () => {
    const now = vi.spyOn(performance, 'now').mockReturnValue(300);
    const seen: RebuildProgress[] = [];
    const progress = logProgress(events, 2, (line) => seen.push(line));
    await progress.report(100, at(100), 'building');
    now.mockReturnValue(900);
    await progress.report(200, at(200), 'building');
    expect(seen.map((line) => line.events)).toEqual([100]);
    now.mockReturnValue(1_400);
    await progress.report(300, at(300), 'building');
    now.mockReturnValue(1_500);
    await progress.report(400, at(1000), 'done', true);
    expect(seen.map((line) => [line.events, line.phase])).toEqual([
      [100, 'building'],
      [300, 'building'],
      [400, 'done'],
    ]);
    expect(seen.at(-1)).toMatchObject({ fraction: 1, etaSeconds: 0, eventsPerSecond: 333 });
  });
});

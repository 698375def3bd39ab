import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';
import { eventually } from '../support/until.js';

/** The reactors' daily pass runs once per date (UTC): a restart the same day skips it; a clock set back to another date is a new day. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-daily-'));
let now = new Date('2031-03-10T12:00:00Z');
let svc: TestService | undefined;

afterAll(async () => {
  await svc?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The dates of the passes so far, once there are `count` of them (looked for up to 30 s). */
function passes(service: TestService, count: number): Promise<string[]> {
  const dates = async () => (await service.service.backends.events.readStream('reactors-dailypass')).map((event) => String(event.data['date']));
  return eventually(dates, (found) => found.length >= count, 30_000, `${count} daily passes`);
}

describe('daily pass', () => {
  it('runs at the first start, not again at a restart the same day, and again the next day', async () => {
    svc = await startTestService({ REACTOR_DAILY_CHECK: '20ms' }, { clock: () => now, dataDir });
    expect(await passes(svc, 1)).toEqual(['2031-03-10']);
    await svc.stop();
    svc = await startTestService({ REACTOR_DAILY_CHECK: '20ms' }, { clock: () => now, dataDir });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await passes(svc, 1)).toEqual(['2031-03-10']);
    now = new Date('2031-03-11T00:00:01Z');
    expect(await passes(svc, 2)).toEqual(['2031-03-10', '2031-03-11']);
  });

  it('runs again when the clock is set back to an earlier date, then not again that day', async () => {
    now = new Date('2031-03-10T18:00:00Z');
    expect(await passes(svc!, 3)).toEqual(['2031-03-10', '2031-03-11', '2031-03-10']);
    await svc!.stop();
    svc = await startTestService({ REACTOR_DAILY_CHECK: '20ms' }, { clock: () => now, dataDir });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await passes(svc, 3)).toEqual(['2031-03-10', '2031-03-11', '2031-03-10']);
  });
});

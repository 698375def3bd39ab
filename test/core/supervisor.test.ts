import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { HEALTHY_RUN_MS, restartDelay, supervise, type Child } from '../../src/core/supervisor.js';
import { until } from '../support/until.js';

class FakeChild implements Child {
  stopped = false;
  readonly exited: Promise<string>;
  private exit!: (how: string) => void;

  constructor(readonly n: number) {
    this.exited = new Promise((resolve) => (this.exit = resolve));
  }

  die(how = 'exit code 1'): void {
    this.exit(how);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.exit('stopped');
  }
}

/** spawn() answers from the script: a child, or an error for a child that cannot start. */
function spawner(script: ('child' | 'fails')[]) {
  const children: FakeChild[] = [];
  let calls = 0;
  return {
    children,
    calls: () => calls,
    spawn: async () => {
      const next = script[calls++] ?? 'child';
      if (next === 'fails') throw new Error(`spawn ${calls} failed`);
      const child = new FakeChild(calls);
      children.push(child);
      return child;
    },
  };
}

function recordingLogger() {
  const lines: { msg: string; delayMs?: number; exit?: string }[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: 'error' }, stream), lines };
}

const QUICK = () => 1;

describe('restartDelay', () => {
  it('replaces at once a child that ran long, and waits longer and longer while children die soon after starting', () => {
    expect(restartDelay(0, HEALTHY_RUN_MS)).toBe(0);
    expect(restartDelay(8_000, HEALTHY_RUN_MS + 1)).toBe(0);
    const delays: number[] = [];
    for (let delay = 0, i = 0; i < 10; i++) delays.push((delay = restartDelay(delay, 10)));
    expect(delays).toEqual([250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });
});

describe('supervise', () => {
  it('fails when the first child cannot start, and starts no other', async () => {
    const { spawn, calls } = spawner(['fails']);
    await expect(supervise('the test child', spawn, recordingLogger().logger, QUICK)).rejects.toThrow('spawn 1 failed');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls()).toBe(1);
  });

  it('replaces a child that dies, says so, and stops the replacement', async () => {
    const { spawn, children } = spawner([]);
    const { logger, lines } = recordingLogger();
    const supervised = await supervise('the test child', spawn, logger, QUICK);
    expect(supervised.first).toBe(children[0]);
    children[0]!.die('signal SIGKILL');
    await until(() => children.length === 2, 10_000, 'a replacement');
    expect(lines).toEqual([expect.objectContaining({ msg: 'the test child died; starting another', exit: 'signal SIGKILL', delayMs: 1 })]);
    await supervised.stop();
    expect(children.map((child) => child.stopped)).toEqual([false, true]);
  });

  it('tries again when a replacement cannot start', async () => {
    const { spawn, children, calls } = spawner(['child', 'fails', 'fails', 'child']);
    const { logger, lines } = recordingLogger();
    const supervised = await supervise('the test child', spawn, logger, QUICK);
    children[0]!.die();
    await until(() => children.length === 2, 10_000, 'a replacement after two failed starts');
    expect(calls()).toBe(4);
    expect(lines.map((line) => line.msg)).toEqual([
      'the test child died; starting another',
      'could not replace the test child; trying again',
      'could not replace the test child; trying again',
    ]);
    await supervised.stop();
  });

  // On a fake clock: the stop must not wait for the replacement's delay, and no replacement may
  // start after it, which a stop timed on the real clock could not tell from a slow machine.
  it('starts no replacement once stopped while waiting to replace one', async () => {
    vi.useFakeTimers();
    try {
      const { spawn, calls } = spawner([]);
      const supervised = await supervise('the test child', spawn, recordingLogger().logger, () => 60_000);
      const first = supervised.first as FakeChild;
      first.die();
      await vi.advanceTimersByTimeAsync(10);
      let stopped = false;
      const stopping = supervised.stop().then(() => (stopped = true));
      // The jobs pending run, the clock stays where it is.
      await vi.advanceTimersByTimeAsync(0);
      expect(stopped).toBe(true);
      await stopping;
      await vi.advanceTimersByTimeAsync(120_000);
      expect(calls()).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});

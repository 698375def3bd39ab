import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseStat, treeCpuMs } from '../../bench/cpu.js';

describe('bench CPU accounting', () => {
  it('reads the parent and the CPU ticks of a stat line whose command holds spaces and parentheses', () => {
    const line = '4242 (node (api) x) S 17 4242 17 0 -1 4194560 900 0 0 0 1234 567 0 0 20 0 11 0 100 0 0';
    expect(parseStat(line)).toEqual({ ppid: 17, ticks: 1234 + 567 });
  });

  it.runIf(process.platform === 'linux')('counts the CPU time of a child process in its parent tree', async () => {
    // The child burns 200 ms of its own CPU time, says so, and stays alive until stdin closes: the
    // CPU of a child that has exited is no longer in the tree.
    const burn = `const start = process.cpuUsage(); for (;;) { const used = process.cpuUsage(start); if (used.user + used.system >= 200_000) break; }
      process.stdout.write('burnt'); process.stdin.resume();`;
    const before = treeCpuMs(process.pid)!;
    const child = spawn(process.execPath, ['-e', burn], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve) => child.stdout.once('data', resolve));
    const after = treeCpuMs(process.pid)!;
    child.stdin.end();
    await new Promise((resolve) => child.once('exit', resolve));
    // /proc counts in clock ticks (10 ms): allow one tick for the rounding.
    expect(after - before).toBeGreaterThanOrEqual(190);
  });
});

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseStat, parseWrittenBytes, threadWrites, treeCpuMs } from '../../bench/cpu.js';

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

  it.each([
    // given a /proc/<pid>/task/<tid>/io text, then the bytes it says the thread wrote
    ['rchar: 9000\nwchar: 17710\nsyscr: 12\nsyscw: 8\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n', 17710],
    ['wchar: 0\n', 0],
    ['rchar: 12\n', null],
  ])('reads what a thread wrote from its io text (%#)', (text, bytes) => {
    expect(parseWrittenBytes(text)).toBe(bytes);
  });

  it.runIf(process.platform === 'linux')('counts the bytes each thread of a process writes, in that thread', async () => {
    // The child's main thread writes 1 MiB to a file, then waits; its other threads write nothing of it.
    const write = `const fs = require('node:fs'); const os = require('node:os'); const path = require('node:path');
      const file = path.join(os.tmpdir(), 'csr-bench-writes-' + process.pid); fs.writeFileSync(file, Buffer.alloc(1 << 20)); fs.rmSync(file);
      process.stdout.write('written'); process.stdin.resume();`;
    const child = spawn(process.execPath, ['-e', write], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve) => child.stdout.once('data', resolve));
    const written = threadWrites(child.pid!)!;
    child.stdin.end();
    await new Promise((resolve) => child.once('exit', resolve));
    expect(written.get(child.pid!)).toBeGreaterThanOrEqual(1 << 20);
    const others = [...written].filter(([tid]) => tid !== child.pid).reduce((sum, [, bytes]) => sum + bytes, 0);
    expect(others).toBeLessThan(1 << 20);
  });
});

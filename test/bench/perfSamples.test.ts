import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELPERS, splitPerf } from '../../bench/costStages.js';
import { jsFrameOf, parsePerfScript, perfAvailable, perfTarget, recordPerf } from '../../bench/perfSamples.js';

const PERF = perfAvailable();

const SCRIPT = `  4242 
	    7fa1e40f1cfc JS:*upsertRecords file:///srv/dist/commands/upsert.js:28:36 (/tmp/perf-4242.map)
	         155c9d3 Builtins_AsyncGeneratorAwaitResolveClosure (/usr/bin/node)
	          c4993d v8::internal::(anonymous namespace)::Invoke (/usr/bin/node)

  4250  1482.064343: 
	ffffffff8e21c0a1 iowrite16+0x11 ([kernel.kallsyms])
	    7fa1e40f2000 JS:^write file:///srv/dist/src/eventstore/sqlite/groupCommitter.js:206:10 (/tmp/perf-4242.map)

  4251 
	          d0c0de v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot> (/usr/bin/node)

  4242 
	    7fa1e40f3000 JS:*changed file:///srv/dist/src/sqlite/fileSignal.js:15:16 (/tmp/perf-4242.map)
	    7fa1e40f4000 JS:^ file:///srv/dist/src/readstore/sqlite/checkpointWaiters.js:24:55 (/tmp/perf-4242.map)
`;

describe('perf samples (bench/perfSamples.ts)', () => {
  it('reads the thread and the frames, innermost first, of each sample of `perf script`', () => {
    const samples = parsePerfScript(SCRIPT);
    expect(samples.map((sample) => sample.tid)).toEqual([4242, 4250, 4251, 4242]);
    expect(samples[0]!.frames[0]).toEqual({ symbol: 'JS:*upsertRecords file:///srv/dist/commands/upsert.js:28:36', dso: '/tmp/perf-4242.map' });
    // A symbol with parentheses of its own keeps them; only the last group names the file.
    expect(samples[0]!.frames[2]).toEqual({ symbol: 'v8::internal::(anonymous namespace)::Invoke', dso: '/usr/bin/node' });
    // The offset into a kernel symbol is not part of its name.
    expect(samples[1]!.frames[0]).toEqual({ symbol: 'iowrite16', dso: '[kernel.kallsyms]' });
    // With `-F tid,time,...` the header has the sample's time (seconds), kept in µs.
    expect(samples[1]!.timeUs).toBe(1_482_064_343);
    expect(samples[0]!.timeUs).toBeUndefined();
  });

  it.each([
    // given a perf symbol, then the JavaScript frame it names (null: not JavaScript)
    ['JS:*upsertRecords file:///srv/dist/commands/upsert.js:28:36', { functionName: 'upsertRecords', url: 'file:///srv/dist/commands/upsert.js' }],
    ['JS:^write file:///srv/dist/src/eventstore/sqlite/groupCommitter.js:206:10', { functionName: 'write', url: 'file:///srv/dist/src/eventstore/sqlite/groupCommitter.js' }],
    ['JS:~resOnFinish node:_http_server:966:21', { functionName: 'resOnFinish', url: 'node:_http_server' }],
    ['JS:* file:///srv/node_modules/@hono/node-server/dist/index.mjs:1040:9', { functionName: '', url: 'file:///srv/node_modules/@hono/node-server/dist/index.mjs' }],
    ['Builtins_FulfillPromise', null],
    ['RegExp:^[0-9a-f]{8}$', null],
  ])('%s is %o', (symbol, frame) => {
    expect(jsFrameOf(symbol)).toEqual(frame);
  });

  it('puts each sample in its thread and stage: the main thread serves the API, a worker is known by its code, a thread without JavaScript is a helper', () => {
    const { stages, threads } = splitPerf(4242, parsePerfScript(SCRIPT));
    expect(Object.fromEntries(stages)).toEqual({
      'API thread|validation + decide': 1,
      // The deepest frame of the project's code decides: the signal, not the waiter that listens to it.
      'API thread|wake-ups from other threads': 1,
      'commit thread|append + commit': 1,
      [`other threads|${HELPERS}`]: 1,
    });
    // The same threads by id (createCost.ts puts each thread's bytes written in its row by them).
    expect(Object.fromEntries(threads)).toEqual({
      4242: { thread: 'API thread', native: false },
      4250: { thread: 'commit thread', native: false },
      4251: { thread: 'other threads', native: true },
    });
  });

  // Where `perf record` cannot sample (no linux-perf, or kernel.perf_event_paranoid too high) this
  // one is reported as skipped, and createCost.ts splits by V8's profiler.
  it.runIf(PERF)('samples a running process and names its JavaScript functions (needs `perf record`)', async () => {
    // The burn starts once perf records (perf names only code that V8 compiles while it records),
    // and the process then exits by itself (its exit writes the JIT dump out).
    const burn = `function burnForPerf() { let x = 0; for (let i = 0; i < 1e6; i++) x += Math.sqrt(i); return x; }
      process.stdout.write('ready'); process.stdin.once('data', () => { const end = Date.now() + 1500; while (Date.now() < end) burnForPerf(); process.exit(0); });`;
    const target = perfTarget();
    const child = spawn(process.execPath, [...target.args, '-e', burn], { cwd: target.cwd, stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve) => child.stdout.once('data', resolve));
    const recording = await recordPerf(child.pid!, 1000, target);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    child.stdin.write('go\n');
    await exited;
    const toUs = Number(process.hrtime.bigint() / 1000n) - 500_000;
    const samples = await recording.stop({ fromUs, toUs });
    // Only the window's: perf stamps samples with the clock process.hrtime reads.
    expect(samples.every(({ timeUs }) => timeUs! >= fromUs && timeUs! <= toUs)).toBe(true);
    const named = samples.filter((sample) => sample.frames.some((frame) => jsFrameOf(frame.symbol)?.functionName === 'burnForPerf'));
    expect(samples.length).toBeGreaterThan(100);
    expect(named.length / samples.length).toBeGreaterThan(0.5);
    // Named from the JIT dump (perf inject's libraries), not from a map without lifetimes; its folder is gone.
    expect(named[0]!.frames.find((frame) => jsFrameOf(frame.symbol)?.functionName === 'burnForPerf')!.dso).toMatch(/jitted-\d+-\d+\.so$/);
    expect(existsSync(target.cwd)).toBe(false);
    // perf's cache of the binaries it saw (a copy of every library perf inject made) stays out of the home folder.
    expect(existsSync(join(homedir(), '.debug', 'tmp', basename(target.cwd)))).toBe(false);
  }, 20_000);
});


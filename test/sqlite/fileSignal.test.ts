import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fileSignal } from '../../src/sqlite/fileSignal.js';
import { repoRoot } from '../support/process.js';

/** A ring is heard asynchronously: a ring on a third signal, heard, marks "everything rung before has been heard". */
async function settled(): Promise<void> {
  await new Promise<void>((resolve) => {
    const receiver = fileSignal('settle', '/tmp/settle', () => {
      receiver.close();
      sender.close();
      resolve();
    });
    const sender = fileSignal('settle', '/tmp/settle', () => undefined);
    sender.changed();
  });
}

describe('fileSignal', () => {
  it('tells the other openers of the same file and kind, not the sender nor other files', async () => {
    const heard: string[] = [];
    let bHeard!: () => void;
    const bHeardIt = new Promise<void>((resolve) => (bHeard = resolve));
    const a = fileSignal('log', '/data/events.db', () => heard.push('a'));
    const b = fileSignal('log', '/data/./events.db', () => {
      heard.push('b');
      bHeard();
    });
    const otherFile = fileSignal('log', '/elsewhere/events.db', () => heard.push('other file'));
    const otherKind = fileSignal('checkpoint', '/data/events.db', () => heard.push('other kind'));
    a.changed();
    await bHeardIt;
    await settled();
    expect(heard).toEqual(['b']);
    for (const signal of [a, b, otherFile, otherKind]) signal.close();
  });

  it('says nothing about in-memory databases, which nobody else can open', async () => {
    const heard: string[] = [];
    const a = fileSignal('log', ':memory:', () => heard.push('a'));
    const b = fileSignal('log', ':memory:', () => heard.push('b'));
    a.changed();
    await settled();
    expect(heard).toEqual([]);
    a.close();
    b.close();
  });

  it('is not heard after close', async () => {
    const heard: string[] = [];
    const a = fileSignal('log', '/data/closing.db', () => heard.push('a'));
    const b = fileSignal('log', '/data/closing.db', () => heard.push('b'));
    b.close();
    a.changed();
    await settled();
    expect(heard).toEqual([]);
    a.close();
  });
});

describe('fileSignal across threads and processes', () => {
  it('wakes the other threads of the process (the role threads), not the thread that rang', () => {
    const output = execFileSync(process.execPath, ['test/fixtures/threadFileSignal.mjs', '/data/events.db'], { cwd: repoRoot, encoding: 'utf8' });
    expect(JSON.parse(output)).toEqual({ main: ['worker rang'], worker: ['main rang'], workerThreadId: 1 });
  });

  it('does the same for a thread numbered past the cells of its own, which waits on the shared one', () => {
    const output = execFileSync(process.execPath, ['test/fixtures/threadFileSignal.mjs', '/data/events.db', '40'], { cwd: repoRoot, encoding: 'utf8' });
    expect(JSON.parse(output)).toEqual({ main: ['worker rang'], worker: ['main rang'], workerThreadId: 41 });
  });

  it("tells the primary and the other workers of a worker's change, and every worker of the primary's (API_PROCESSES)", () => {
    const output = execFileSync(process.execPath, ['test/fixtures/clusterFileSignal.mjs', '/data/events.db'], { cwd: repoRoot, encoding: 'utf8' });
    expect(JSON.parse(output)).toEqual({ primary: 1, poster: 1, listener: 2 });
  });
});

import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fileSignal } from '../../src/sqlite/fileSignal.js';
import { repoRoot } from '../support/process.js';

/** Messages are delivered asynchronously: a round trip on a third signal marks "everything sent before has arrived". */
async function settled(): Promise<void> {
  await new Promise<void>((resolve) => {
    const receiver = fileSignal<number>('settle', '/tmp/settle', () => {
      receiver.close();
      sender.close();
      resolve();
    });
    const sender = fileSignal<number>('settle', '/tmp/settle', () => undefined);
    sender.post(1);
  });
}

describe('fileSignal', () => {
  it('tells the other openers of the same file and kind, not the sender nor other files', async () => {
    const heard: string[] = [];
    let bHeard!: () => void;
    const bHeardIt = new Promise<void>((resolve) => (bHeard = resolve));
    const a = fileSignal<number>('log', '/data/events.db', (n) => heard.push(`a${n}`));
    const b = fileSignal<number>('log', '/data/./events.db', (n) => {
      heard.push(`b${n}`);
      bHeard();
    });
    const otherFile = fileSignal<number>('log', '/elsewhere/events.db', (n) => heard.push(`other${n}`));
    const otherKind = fileSignal<number>('checkpoint', '/data/events.db', (n) => heard.push(`kind${n}`));
    a.post(7);
    await bHeardIt;
    await settled();
    expect(heard).toEqual(['b7']);
    for (const signal of [a, b, otherFile, otherKind]) signal.close();
  });

  it('says nothing about in-memory databases, which nobody else can open', async () => {
    const heard: number[] = [];
    const a = fileSignal<number>('log', ':memory:', (n) => heard.push(n));
    const b = fileSignal<number>('log', ':memory:', (n) => heard.push(n));
    a.post(1);
    await settled();
    expect(heard).toEqual([]);
    a.close();
    b.close();
  });
});

describe('fileSignal across the processes of a node:cluster (API_PROCESSES)', () => {
  it("tells the primary and the other workers of a worker's news, and every worker of the primary's", () => {
    const output = execFileSync(process.execPath, ['test/fixtures/clusterFileSignal.mjs', '/data/events.db'], { cwd: repoRoot, encoding: 'utf8' });
    expect(JSON.parse(output)).toEqual({ primary: [42], poster: [7], listener: [42, 7] });
  });
});

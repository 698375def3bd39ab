import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteReadStore } from '../../src/readstore/sqlite/index.js';
import { csrTool } from '../support/cli.js';
import { repoRoot } from '../support/process.js';
import { until } from '../support/until.js';

/**
 * Who owns a rebuild (issue 39 item 6): a dead builder's process that is a zombie (`<defunct>`, not
 * reaped yet) is dead, so a new rebuild takes over; a builder that truly runs is named, and
 * `--wait` follows it to its end with its outcome.
 */

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function store(): Promise<{ dir: string; csr: ReturnType<typeof csrTool> }> {
  const dir = mkdtempSync(join(tmpdir(), 'csr-rebuild-owner-'));
  dirs.push(dir);
  const csr = csrTool(dir);
  await csr.json('workspaces', 'create', 'owners');
  return { dir, csr };
}

function lines(child: ChildProcess, stream: 'stdout' | 'stderr'): () => string {
  let text = '';
  child[stream]!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));
}

/** A process state from /proc (Linux): R, S, Z... */
function stateOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] ?? null;
  } catch {
    return null;
  }
}

describe('csr projections rebuild: the owner of a rebuild in progress', () => {
  it.skipIf(process.platform !== 'linux')('takes over from a builder whose process is a zombie', async () => {
    const { dir, csr } = await store();
    // A parent that never reaps its child: its thread blocks for good, so libuv never waits on it.
    const parent = spawn(process.execPath, ['-e', "const c = require('node:child_process').spawn('true'); console.log(c.pid); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);"], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(parent);
    const out = lines(parent, 'stdout');
    await until(() => /^\d+\n/.test(out()), 10_000, 'the child pid');
    const zombie = Number(out().trim());
    await until(() => stateOf(zombie) === 'Z', 10_000, 'the child to be a zombie');

    // A rebuild left by that process, as a killed `csr projections rebuild` leaves it.
    const readStore = openSqliteReadStore({ path: join(dir, 'read.db') });
    await readStore.beginGeneration({ version: '1', owner: `${hostname()}:${zombie}`, restart: false, ownerAlive: () => false });
    await readStore.close();

    const rebuilt = await csr.run('projections', 'rebuild', 'records', '--json');
    expect(rebuilt.stderr).not.toContain('already running');
    expect(rebuilt.code).toBe(0);
    expect(stateOf(zombie)).toBe('Z');
  }, 60_000);

  it('names a builder that runs, and --wait follows it to its end (exit 0) or to its death (exit 1)', async () => {
    const { dir, csr } = await store();
    const builder = () => {
      const child = spawn(process.execPath, [join(repoRoot, 'test', 'fixtures', 'heldRebuild.mjs'), join(dir, 'read.db')], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] });
      children.push(child);
      return { child, out: lines(child, 'stdout') };
    };
    const follow = () => {
      const child = spawn(process.execPath, [join(repoRoot, 'bin', 'csr'), 'projections', 'rebuild', 'records', '--wait', '--json'], {
        cwd: repoRoot,
        env: { ...process.env, DATA_DIR: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      return { child, out: lines(child, 'stdout'), err: lines(child, 'stderr') };
    };

    const first = builder();
    await until(() => first.out().includes('building'), 20_000, 'the builder to begin');
    const generation = Number(/building (\d+)/.exec(first.out())![1]);
    const refused = await csr.fails(1, 'projections', 'rebuild', 'records');
    expect(refused.trim().split('\n')).toHaveLength(1);
    expect(refused).toMatch(new RegExp(`a rebuild is already running \\(${hostname()}:${first.child.pid}, generation ${generation}\\b.*--wait`));

    const following = follow();
    await until(() => following.err().includes('"phase":"building"'), 20_000, 'a progress line while following');
    expect(following.child.exitCode).toBe(null);
    first.child.stdin!.end('finish\n');
    expect(await exited(following.child)).toBe(0);
    expect(JSON.parse(following.out())).toMatchObject({ projection: 'records', generation, followed: `${hostname()}:${first.child.pid}` });
    expect(await exited(first.child)).toBe(0);

    const second = builder();
    await until(() => second.out().includes('building'), 20_000, 'the second builder to begin');
    const orphaned = follow();
    await until(() => orphaned.err().includes('"phase":"building"'), 20_000, 'a progress line while following');
    second.child.kill('SIGKILL');
    expect(await exited(orphaned.child)).toBe(1);
    expect(orphaned.out()).toBe('');
    expect(orphaned.err()).toMatch(/stopped before it finished.*csr projections rebuild records/);
  }, 90_000);
});

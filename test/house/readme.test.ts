import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/process.js';
import { freePort } from '../support/ports.js';

/**
 * The README's shell blocks, run as a new user pastes them: the `server` block in one shell, then
 * every `client` block in another, on a fresh DATA_DIR. Each block says whether it is run
 * (`<!-- test: server|client -->`) or why not (`<!-- not tested: ... -->`), so none can rot unseen.
 *
 * Two substitutions, both about this machine rather than the guide: the API's port is a free one
 * instead of 8080, and `npm install` is not run again (CI's `npm ci` has just installed, and the
 * suite's setup built dist/; rebuilding it would rewrite files under the test files running beside
 * this one, so `npm start` runs with --ignore-scripts, which skips only its prestart build).
 */

interface Block {
  mark: string;
  code: string;
}

function shellBlocks(): Block[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  return [...readme.matchAll(/(?:<!-- ((?:test|not tested):[^>]*) -->\n)?```sh\n([\s\S]*?)```/g)].map((match) => ({ mark: match[1] ?? '', code: match[2]! }));
}


function bash(script: string, env: NodeJS.ProcessEnv): ChildProcess & { output: () => string } {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return Object.assign(child, { output: () => output });
}

describe('README', () => {
  const blocks = shellBlocks();
  let server: ReturnType<typeof bash> | null = null;
  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await once(server, 'exit');
    }
  });

  it('marks every shell block as run by this test or says why not', () => {
    expect(blocks.length).toBeGreaterThan(3);
    expect(blocks.filter((block) => block.mark === '').map((block) => block.code)).toEqual([]);
  });

  it('quick start: the server block starts the API, the client blocks write and read through it', async () => {
    const port = await freePort();
    const env = { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), 'csr-readme-')), PORT: String(port), LOG_FORMAT: 'json' };
    const local = (code: string) => code.replaceAll('localhost:8080', `localhost:${port}`).replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
    const serverCode = blocks.find((block) => block.mark === 'test: server')!.code;
    const runnable = serverCode
      .split('\n')
      .filter((line) => !line.startsWith('npm install'))
      .map((line) => line.replace(/^npm start\b/, 'exec npm start --silent --ignore-scripts'))
      .join('\n');
    expect(runnable).toContain('npm start');
    server = bash(local(runnable), env);
    await waitForPort(port, server);

    const client = bash(blocks.filter((block) => block.mark === 'test: client').map((block) => local(block.code)).join('\n'), env);
    // 'close', not 'exit': the output is read next, and the pipes may still hold some of it at the exit.
    const [code] = await once(client, 'close');
    expect(client.output()).toMatch(/"created":1/);
    expect(client.output()).toMatch(/"name":"Globex"/);
    expect(code).toBe(0);
  }, 60_000);
});

async function waitForPort(port: number, server: ReturnType<typeof bash>): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (server.exitCode !== null) throw new Error(`the server block exited: ${server.output()}`);
    const answered = await fetch(`http://127.0.0.1:${port}/api/v1/clients`).then(
      () => true,
      () => false,
    );
    if (answered) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the server block did not listen on ${port}: ${server.output()}`);
}

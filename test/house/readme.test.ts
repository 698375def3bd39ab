import { once } from 'node:events';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/process.js';
import { bash, shellBlocks, startedPort } from '../support/readme.js';

/**
 * The README's shell blocks, run as a new user pastes them: the `server` block in one shell, then
 * every `client` block in another, on a fresh DATA_DIR. Each block says whether it is run
 * (`<!-- test: server|client -->`) or why not (`<!-- not tested: ... -->`), so none can rot unseen.
 * The client blocks run in order in one shell, as a reader pastes them one after another.
 *
 * Two substitutions, both about this machine rather than the guide: the API listens on a port the
 * server picks (PORT=0, read from its start line) instead of 8080, and `npm install` is not run again (CI's `npm ci` has just installed, and the
 * suite's setup built dist/; rebuilding it would rewrite files under the test files running beside
 * this one, so `npm start` runs with --ignore-scripts, which skips only its prestart build).
 */

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
    const env = { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), 'csr-readme-')), PORT: '0', LOG_FORMAT: 'json' };
    const serverCode = blocks.find((block) => block.mark === 'test: server')!.code;
    const runnable = serverCode
      .split('\n')
      .filter((line) => !line.startsWith('npm install'))
      .map((line) => line.replace(/^npm start\b/, 'exec npm start --silent --ignore-scripts'))
      .join('\n');
    expect(runnable).toContain('npm start');
    server = bash(runnable, env);
    const port = await startedPort(server);
    const local = (code: string) => code.replaceAll('localhost:8080', `localhost:${port}`).replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);

    const client = bash(blocks.filter((block) => block.mark === 'test: client').map((block) => local(block.code)).join('\n'), env);
    // 'close', not 'exit': the output is read next, and the pipes may still hold some of it at the exit.
    const [code] = await once(client, 'close');
    expect(client.output()).toMatch(/"created":1/);
    expect(client.output()).toMatch(/"name":"Globex"/);
    // The sync loop's first page: the change feed lists the create.
    expect(client.output()).toMatch(/clients\.created [0-9a-f-]{36}\n/);
    // The later blocks too (issue 39 item 10): a record as it was at a moment after its creation,
    // the audit chain verified, the contact erased; their files go to a temporary folder.
    expect(client.output()).toMatch(/"name":"Initech",.*"tier":"SMB"/);
    expect(client.output()).toMatch(/^ok$/m);
    expect(client.output()).toMatch(/^erased 1 record\(s\) at \S+Z:$/m);
    expect(code, client.output()).toBe(0);
    for (const file of ['openapi.json', 'acme.ndjson', 'ann.json', 'ledger.json', 'acme.tar']) expect(existsSync(join(repoRoot, file)), file).toBe(false);
  }, 180_000);
});

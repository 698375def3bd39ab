import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, masterKeyRequired } from '../../src/config.js';
import { repoRoot } from '../support/process.js';

/**
 * On the shared backends (EventStoreDB + MongoDB) the master key must be given: a key made by each
 * process (DATA_DIR/master.key) differs between the api, projector and dispatcher containers, and
 * all but the first would stop on a wrong key for ever. The start fails with one line naming
 * MASTER_KEY_FILE, before anything connects. No database runs here: the addresses are two local
 * listeners that only record whether a process tried to connect.
 */

let listeners: Server[] = [];
let connections = 0;
let urls: { EVENTSTORE_URL: string; MONGODB_URL: string };
let dataDir: string;

async function listener(): Promise<number> {
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  listeners.push(server);
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  urls = { EVENTSTORE_URL: `esdb://127.0.0.1:${await listener()}?tls=false`, MONGODB_URL: `mongodb://127.0.0.1:${await listener()}/csr?directConnection=true` };
  dataDir = mkdtempSync(join(tmpdir(), 'csr-masterkey-'));
});

afterAll(async () => {
  await Promise.all(listeners.map((server) => new Promise((resolve) => server.close(resolve))));
  listeners = [];
  rmSync(dataDir, { recursive: true, force: true });
});

function run(command: string[], extraEnv: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'info', PORT: '0', ...extraEnv };
  delete env.MASTER_KEY_FILE;
  const started = Date.now();
  const child = spawn(process.execPath, command, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

const EXPECTED =
  'invalid configuration: MASTER_KEY_FILE must be set with EVENTSTORE_URL and MONGODB_URL: every process must use the same master key, so none may make its own; ' +
  'make one once (openssl rand -hex 32 > master.key), keep it safe and give that file to every process (docs/privacy.md)';

describe('the master key on the shared backends', () => {
  it('is required there, and only there', () => {
    expect(() => loadConfig(urls)).toThrow(new Error(EXPECTED));
    expect(loadConfig({ ...urls, MASTER_KEY_FILE: '/run/secrets/master_key' }).masterKeyFile).toBe('/run/secrets/master_key');
    expect(masterKeyRequired(loadConfig({}))).toBe(false);
    expect(masterKeyRequired({ eventStoreUrl: 'esdb://x', mongoDbUrl: 'mongodb://y', databaseUrl: null })).toBe(true);
    expect(masterKeyRequired({ eventStoreUrl: null, mongoDbUrl: null, databaseUrl: 'postgres://db/csr' })).toBe(true);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/csr' })).toThrow(/MASTER_KEY_FILE must be set with DATABASE_URL: every process/);
  });

  it.each([
    ['the server (every role, as each container runs it)', ['dist/src/main.js']],
    ['csr', ['bin/csr', 'workspaces', 'list']],
  ])('%s stops with one line naming MASTER_KEY_FILE, before connecting, making no key', async (_given, command) => {
    connections = 0;
    const result = await run(command, urls);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining(EXPECTED)]);
    expect(result.stdout).toBe('');
    expect(connections).toBe(0);
    expect(readdirSync(dataDir)).toEqual([]);
  }, 30_000);
});

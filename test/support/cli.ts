import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { repoRoot } from './process.js';

/**
 * The built `csr` tool (`npm test` builds first; test/globalSetup.ts builds too) run as a child
 * process on a DATA_DIR, exactly as an operator runs it.
 */

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Csr {
  run(...args: string[]): Promise<Run>;
  /** Runs a command that must succeed with --json and answers its one JSON document. */
  json<T = Record<string, unknown>>(...args: string[]): Promise<T>;
  /** Runs a command that must fail: message on stderr, nothing on stdout. Answers stderr. */
  fails(code: 1 | 2, ...args: string[]): Promise<string>;
}

export function csrTool(dataDir: string, extraEnv: Record<string, string> = {}): Csr {
  const run = (...args: string[]): Promise<Run> => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ...extraEnv };
    delete env.EVENTSTORE_URL;
    delete env.MONGODB_URL;
    // The test run's DATABASE_URL names the server for the PostgreSQL suites; a csr of this test gets one only when given.
    if (extraEnv.DATABASE_URL === undefined) delete env.DATABASE_URL;
    const child = spawn(process.execPath, [join(repoRoot, 'bin', 'csr'), ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  };
  return {
    run,
    async json<T>(...args: string[]) {
      const result = await run(...args, '--json');
      // The one note a successful command may write: that it made a new store (first command on a DATA_DIR).
      expect(result.stderr.replace(/^csr: no store in .* yet: created a new one there \(DATA_DIR chooses another\)\n$/, '')).toBe('');
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout) as T;
    },
    async fails(code: 1 | 2, ...args: string[]) {
      const result = await run(...args);
      expect(result.stdout).toBe('');
      expect(result.code).toBe(code);
      expect(result.stderr.trim()).not.toBe('');
      return result.stderr;
    },
  };
}

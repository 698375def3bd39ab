import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from '../support/process.js';

/** A built server (`node dist/src/main.js`) as its own OS process, with the roles given, on PostgreSQL. */
export interface RoleProcess {
  roles: string;
  /** The API's URL (null for roles without the API). */
  url: string | null;
  pid: number;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function startRole(roles: string, env: Record<string, string>, startMs = 30_000): Promise<RoleProcess> {
  const child: ChildProcess = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), 'csr-pg-role-')), PORT: '0', LOG_LEVEL: 'info', ROLES: roles, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk) => (output += chunk));
  child.stdout!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string | null>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${roles} did not start: ${output}`)), startMs);
    child.once('exit', (code) => reject(new Error(`${roles} exited with ${code}: ${output}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: unknown; url?: string | null };
        if (typeof entry.msg === 'string' && entry.msg.startsWith('started: ')) {
          clearTimeout(timer);
          resolve(entry.url ?? null);
        }
      } catch {
        // not a log line
      }
    });
  });
  return {
    roles,
    url,
    pid: child.pid!,
    output: () => output,
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}

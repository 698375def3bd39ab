import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './process.js';
import { until } from './until.js';

/** The README's shell blocks and how its tests run them (test/house/readme.test.ts, test/postgres/readme.test.ts). */

export interface Block {
  mark: string;
  code: string;
}

export function shellBlocks(): Block[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  return [...readme.matchAll(/(?:<!-- ((?:test|not tested):[^>]*) -->\n)?```sh\n([\s\S]*?)```/g)].map((match) => ({ mark: match[1] ?? '', code: match[2]! }));
}


export function bash(script: string, env: NodeJS.ProcessEnv): ChildProcess & { output: () => string } {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return Object.assign(child, { output: () => output });
}

/** The port of the API, from the server's start line (`started: API on http://...`). */
export async function startedPort(server: ReturnType<typeof bash>): Promise<number> {
  let port: number | null = null;
  // A deadline: a busy machine may take seconds to start npm, Node and the roles.
  await until(
    () => {
      if (server.exitCode !== null) throw new Error(`the server block exited: ${server.output()}`);
      port = startLinePort(server.output());
      return port !== null;
    },
    40_000,
    'the server block\'s start line',
  );
  return port!;
}

function startLinePort(output: string): number | null {
  for (const line of output.split('\n')) {
    try {
      const entry = JSON.parse(line) as { msg?: unknown; url?: unknown };
      if (typeof entry.msg === 'string' && entry.msg.startsWith('started: ') && typeof entry.url === 'string') return Number(new URL(entry.url).port);
    } catch {
      // not a log line
    }
  }
  return null;
}

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The built server (`npm test` builds first) as a real child process, e.g. to kill it with SIGKILL. */

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** A "roles started" log line (debug): one per set of roles started, in any thread or API process. */
export interface StartedService {
  roles: string[];
  pid: number;
  url: string | null;
  /** Where METRICS_PORT serves /metrics, or null. */
  metricsUrl: string | null;
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote so far (its log). */
  output(): string;
  /** The services it said it started so far, in order. */
  started(): StartedService[];
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** `command`: how the server is started (default: node on the build, as the Docker image does). */
export async function spawnServer(env: Record<string, string>, command: string[] = [process.execPath, 'dist/src/main.js'], startMs = 20_000): Promise<ServerProcess> {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: repoRoot,
    // DATABASE_URL of the test run names the server for the PostgreSQL suites, not a backend for every server started here.
    env: { ...process.env, DATABASE_URL: '', PORT: '0', LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), startMs);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
    lines.on('line', (line) => {
      try {
        const entry = JSON.parse(line);
        // The first API to listen (with API_PROCESSES, the primary may still be starting the others),
        // or, where LOG_LEVEL hides those debug lines, the server's one start line.
        const started = entry.msg === 'roles started' || (typeof entry.msg === 'string' && entry.msg.startsWith('started: '));
        if (started && entry.url) {
          clearTimeout(timer);
          resolve(entry.url);
        }
      } catch {
        // not a log line
      }
    });
  });
  return {
    url,
    child,
    output: () => stdout + stderr,
    started: () =>
      stdout.split('\n').flatMap((line) => {
        try {
          const entry = JSON.parse(line);
          return entry.msg === 'roles started' ? [{ roles: entry.roles, pid: entry.pid, url: entry.url, metricsUrl: entry.metricsUrl ?? null }] : [];
        } catch {
          return []; // not a log line
        }
      }),
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
}

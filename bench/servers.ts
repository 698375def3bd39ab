import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The bench's server processes: each on a free loopback port, each alone under its load. */

export const root = fileURLToPath(new URL('../..', import.meta.url));

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export interface Server {
  url: string;
  child: ChildProcess;
}

/**
 * Starts `script` (a path under `checkout`, by default this one) on a free port and waits until it
 * answers (logs stay at warn: no per-request lines).
 */
export async function spawnServer(script: string, env: Record<string, string>, checkout: string = root): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const profile = process.env['BENCH_PROFILE'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_PROFILE']}`] : [];
  const child = spawn(process.execPath, [...profile, script], { cwd: checkout, env: { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    try {
      await fetch(url);
      return { url, child };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`${script} did not answer on ${url}`);
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The suite's one compile: type-checks everything (sources, tests, bench) and emits dist/, which
 * the suites that run the built code as child processes use (the `csr` CLI, servers killed with
 * SIGKILL), so that `npx vitest run ...` never tests a stale build. A type error fails the run.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--sourceMap'], { cwd: root, stdio: 'pipe' });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? String(error);
    throw new Error(`the TypeScript build failed:\n${output}`);
  }
}

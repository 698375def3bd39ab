import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Builds dist/ once before the suites that run the built code as child processes (the `csr`
 * CLI, the server killed with SIGKILL), so that `npx vitest run ...` never tests a stale build.
 * Type errors are reported by `npm run typecheck`; tsc still emits, so only a missing output
 * fails here.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? '';
    if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) throw new Error(`build failed:\n${output}`);
  }
}

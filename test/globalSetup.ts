import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The suite's one compile: type-checks everything (sources, tests, bench) and emits dist/, which
 * the suites that run the built code as child processes use (the `csr` CLI, servers killed with
 * SIGKILL), so that `npx vitest run ...` never tests a stale build. A type error fails the run.
 * Incremental, with its record inside dist/ (deleting dist/ deletes it): a run after another with
 * the same sources checks them in a fraction of a full compile, and CI runs vitest four times
 * (.ci/run). Files whose content changed are checked and emitted again, and the errors of
 * unchanged files are kept in the record and reported again.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--sourceMap', '--incremental', '--tsBuildInfoFile', join('dist', '.tsbuildinfo')], { cwd: root, stdio: 'pipe' });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? String(error);
    throw new Error(`the TypeScript build failed:\n${output}`);
  }
}

import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * Whether work on a store file should go to a thread of its own (`script`, beside the module that
 * starts it) rather than run on the calling thread: the audit's chain check, a rebuild's writes.
 * With one core a thread only adds its start and its own cold JIT; an in-memory store has no file
 * another connection could open; and when the sources run untranslated (tests), no compiled
 * thread script stands beside them.
 */
export function fileThreadFits(script: URL, path: string, cores = availableParallelism()): boolean {
  return path !== ':memory:' && cores >= 2 && existsSync(fileURLToPath(script));
}

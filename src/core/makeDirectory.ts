import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * `mkdir -p`, one folder at a time. Node's `mkdirSync(path, { recursive: true })` never returns
 * where a file system answers ENOENT to every mkdir (a DATA_DIR under /proc): it takes ENOENT for
 * a missing parent, makes the parent (there already), and tries again for ever. Here the first
 * mkdir that fails throws its error, and a path that is there but no folder is refused.
 */
export function makeDirectory(path: string): void {
  const missing: string[] = [];
  for (let dir = resolve(path); !existsSync(dir); dir = dirname(dir)) {
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir);
    } catch (error) {
      // Made meanwhile by another process: the check below says whether it is a folder.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  if (!statSync(path).isDirectory()) throw new Error(`ENOTDIR: not a directory, mkdir '${resolve(path)}'`);
}

import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A small real filesystem (tmpfs, size-limited) to fill up: mounting needs root (or CAP_SYS_ADMIN);
 * `mountSmallDisk` returns null where the machine refuses it.
 */
export interface SmallDisk {
  dir: string;
  /** Writes a filler file until the filesystem is full. */
  fill(): void;
  /** Deletes the filler. */
  free(): void;
  /** Frees this many bytes of the filler, as an operator who deletes an old file or two. */
  freeSome(bytes: number): void;
  unmount(): void;
}

export function mountSmallDisk(sizeMiB: number): SmallDisk | null {
  const dir = mkdtempSync(join(tmpdir(), 'csr-smalldisk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
      // The last bytes that fit in no whole chunk.
      try {
        for (;;) writeSync(fd, chunk, 0, 512);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    freeSome(bytes) {
      truncateSync(filler, Math.max(0, statSync(filler).size - bytes));
    },
    unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

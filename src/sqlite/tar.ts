import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';

/**
 * A minimal POSIX ustar archive, for backups: `tar tf backup.tar` lists it and `tar xf` unpacks
 * it with standard tools. Regular files only, names under 100 bytes, copied in chunks (a store
 * file may be large).
 */

const BLOCK = 512;
const CHUNK = 1024 * 1024;

function header(name: string, size: number, mtime: Date): Buffer {
  const block = Buffer.alloc(BLOCK);
  const field = (offset: number, length: number, text: string) => block.write(text, offset, length, 'ascii');
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  field(0, 100, name);
  field(100, 8, octal(0o644, 8));
  field(108, 8, octal(0, 8));
  field(116, 8, octal(0, 8));
  field(124, 12, octal(size, 12));
  field(136, 12, octal(Math.floor(mtime.getTime() / 1000), 12));
  field(148, 8, '        ');
  field(156, 1, '0');
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  let sum = 0;
  for (const byte of block) sum += byte;
  field(148, 8, `${octal(sum, 7)}\0`);
  return block;
}

/** Writes `files` (archive name -> path on disk) into a new archive at `target`, then fsyncs it. */
export function writeTar(target: string, files: [name: string, path: string][]): void {
  const out = openSync(target, 'wx');
  try {
    const buffer = Buffer.alloc(CHUNK);
    for (const [name, path] of files) {
      const input = openSync(path, 'r');
      try {
        const { size, mtime } = fstatSync(input);
        writeSync(out, header(name, size, mtime));
        let copied = 0;
        while (copied < size) {
          const read = readSync(input, buffer, 0, Math.min(CHUNK, size - copied), copied);
          if (read === 0) throw new Error(`${name} shrank while being archived`);
          writeSync(out, buffer, 0, read);
          copied += read;
        }
        const padding = (BLOCK - (size % BLOCK)) % BLOCK;
        if (padding > 0) writeSync(out, Buffer.alloc(padding));
      } finally {
        closeSync(input);
      }
    }
    writeSync(out, Buffer.alloc(BLOCK * 2));
  } finally {
    closeSync(out);
  }
}

/** Each member of the archive: its name, and `extract(path)` writing its bytes to a new file. */
export function readTar(source: string): { name: string; size: number; extract(path: string): void }[] {
  const input = openSync(source, 'r');
  const members: { name: string; size: number; offset: number }[] = [];
  try {
    const block = Buffer.alloc(BLOCK);
    let offset = 0;
    for (;;) {
      if (readSync(input, block, 0, BLOCK, offset) < BLOCK) throw new Error('the backup file is cut short');
      if (block.every((byte) => byte === 0)) break;
      if (block.toString('ascii', 257, 262) !== 'ustar') throw new Error('not a backup made by csr backup (no tar header)');
      const name = block.toString('ascii', 0, 100).replace(/\0.*$/s, '');
      const size = parseInt(block.toString('ascii', 124, 136).replace(/\0.*$/s, '').trim(), 8);
      members.push({ name, size, offset: offset + BLOCK });
      offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    }
  } finally {
    closeSync(input);
  }
  return members.map(({ name, size, offset }) => ({
    name,
    size,
    extract(path: string) {
      const from = openSync(source, 'r');
      const to = openSync(path, 'wx');
      try {
        const buffer = Buffer.alloc(CHUNK);
        for (let copied = 0; copied < size; ) {
          const read = readSync(from, buffer, 0, Math.min(CHUNK, size - copied), offset + copied);
          if (read === 0) throw new Error('the backup file is cut short');
          writeSync(to, buffer, 0, read);
          copied += read;
        }
      } finally {
        closeSync(from);
        closeSync(to);
      }
    },
  }));
}

import { existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeDirectory } from '../../src/core/makeDirectory.js';

/** `mkdir -p` one folder at a time (src/core/makeDirectory.ts). */

const root = () => mkdtempSync(join(tmpdir(), 'csr-mkdir-'));

describe('makeDirectory', () => {
  it.each([
    // given what is at the path, when it is made: then it is a folder
    ['nothing, three levels deep', (base: string) => join(base, 'a', 'b', 'c')],
    ['a folder already', (base: string) => base],
    ['nothing, with a trailing slash', (base: string) => `${join(base, 'd')}/`],
  ])('given %s, makes a folder', (_given, pathOf) => {
    const path = pathOf(root());
    makeDirectory(path);
    expect(statSync(path).isDirectory()).toBe(true);
  });

  it('given a file at the path, or above it, refuses with ENOTDIR and makes nothing', () => {
    const base = root();
    const file = join(base, 'file');
    writeFileSync(file, '');
    expect(() => makeDirectory(file)).toThrow(/ENOTDIR/);
    expect(() => makeDirectory(join(file, 'below'))).toThrow(/ENOTDIR/);
    expect(existsSync(join(file, 'below'))).toBe(false);
  });

  it('given a file system that refuses every mkdir (/proc), throws its error at once', () => {
    expect(() => makeDirectory('/proc/csr-nope/deeper')).toThrow(/^E[A-Z]+: /);
  });
});

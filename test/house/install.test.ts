import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/process.js';

/**
 * A fresh install on each Node.js the README names (issue 39 item 11): `npm install` must not
 * rewrite package-lock.json (it adds what the lock lacks, e.g. `hasInstallScript` of a package
 * with an install script), and must not warn EBADENGINE (a package it always installs wanting
 * another Node). Checked offline, from the lock and the installed packages, as npm decides them.
 */

interface LockEntry {
  version?: string;
  optional?: boolean;
  dev?: boolean;
  hasInstallScript?: boolean;
  engines?: { node?: string };
  link?: boolean;
}

const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
const semver = createRequire(import.meta.url)('semver') as { satisfies(version: string, range: string): boolean };
/** The first release of each line package.json's engines and the README name (20.19+, 22.12+, 24), and a later one. */
const SUPPORTED = ['20.19.0', '20.99.0', '22.12.0', '22.99.0', '24.0.0', '24.99.0'];

describe('npm install', () => {
  it('finds in the lock every installed package with an install script marked so (else it rewrites the lock)', () => {
    const missing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === '' || entry.link) continue;
      const manifest = join(repoRoot, path, 'package.json');
      if (!existsSync(manifest)) continue; // an optional package this platform skipped
      const scripts = (JSON.parse(readFileSync(manifest, 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
      // npm's rule: an install script, or a binding.gyp it would build with node-gyp.
      const installs = ['preinstall', 'install', 'postinstall'].some((name) => name in scripts) || existsSync(join(repoRoot, path, 'binding.gyp'));
      if (installs !== (entry.hasInstallScript === true)) missing.push(`${path}: hasInstallScript should be ${installs}`);
    }
    expect(missing).toEqual([]);
  });

  it('installs no package whose engines leave out a Node.js we support (EBADENGINE); optional ones npm skips', () => {
    const refused: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = entry.engines?.node;
      if (path === '' || entry.optional || !range) continue;
      for (const node of SUPPORTED) if (!semver.satisfies(node, range)) refused.push(`${path} ${entry.version} wants node ${range}, not ${node}`);
    }
    expect(refused).toEqual([]);
  });

  it('.ci names only files that exist', () => {
    const named: string[] = [];
    for (const file of readdirSync(join(repoRoot, '.ci'))) {
      const text = readFileSync(join(repoRoot, '.ci', file), 'utf8');
      for (const match of text.matchAll(/\b((?:src|test|docs|projections|queries|commands)\/[\w./-]+\.(?:ts|md|mjs))\b/g)) named.push(match[1]!);
    }
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((path) => !existsSync(join(repoRoot, path)))).toEqual([]);
  });
});

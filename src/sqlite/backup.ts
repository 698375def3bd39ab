import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { Sqlite } from './driver.js';
import { readTar, writeTar } from './tar.js';
import { makeDirectory } from '../core/makeDirectory.js';

/**
 * Backups of the embedded store: every `*.db` file of DATA_DIR copied by SQLite's online backup
 * API (a consistent snapshot of each file while the server writes it), packed into one tar file.
 *
 * Order matters because each file is its own snapshot: the read model first (its checkpoint is
 * then never ahead of the log it comes with, so the server catches up after a restore), the log
 * next, the other stores after it (a delivery of an event the log does not hold yet is still an
 * event that happened; the fan-out's own checkpoint lives in the log file, so none is skipped).
 */

const FIRST = ['read.db', 'events.db'];
const MANIFEST = 'csr-backup.json';

export interface BackupResult {
  file: string;
  createdAt: string;
  files: { name: string; bytes: number }[];
  bytes: number;
}

function storeFiles(dataDir: string): string[] {
  const names = readdirSync(dataDir).filter((name) => name.endsWith('.db'));
  return [...FIRST.filter((name) => names.includes(name)), ...names.filter((name) => !FIRST.includes(name)).sort()];
}

/** One consistent copy of a live database: the whole file in one step, so no write can restart it. */
async function snapshot(source: string, target: string): Promise<void> {
  const db = new Sqlite(source, { readonly: true, fileMustExist: true });
  try {
    await db.backup(target, { progress: () => 1 << 30 });
  } finally {
    db.close();
  }
}

export async function backupEmbeddedStore(dataDir: string, target: string): Promise<BackupResult> {
  const names = storeFiles(dataDir);
  if (!names.includes('events.db')) throw new Error(`no embedded store in ${dataDir} (no event log there): nothing to back up`);
  if (statSync(target, { throwIfNoEntry: false })?.isDirectory()) {
    throw new Error(`${target} is a folder: give the backup a file name, e.g. ${join(target, 'csr-backup.tar')}`);
  }
  const work = join(dirname(target), `.${basename(target)}.${process.pid}.parts`);
  makeDirectory(work);
  try {
    const createdAt = new Date().toISOString();
    const files: { name: string; bytes: number }[] = [];
    for (const name of names) {
      await snapshot(join(dataDir, name), join(work, name));
      files.push({ name, bytes: statSync(join(work, name)).size });
    }
    const manifest = join(work, MANIFEST);
    writeFileSync(manifest, `${JSON.stringify({ format: 'csr-backup', version: 1, createdAt, files }, null, 2)}\n`);
    const partial = `${target}.partial`;
    rmSync(partial, { force: true });
    try {
      writeTar(partial, [[MANIFEST, manifest], ...names.map((name): [string, string] => [name, join(work, name)])]);
      renameSync(partial, target);
    } catch (error) {
      // A backup that is not complete is never left beside the target to be mistaken for one.
      rmSync(partial, { force: true });
      throw error;
    }
    return { file: target, createdAt, files, bytes: statSync(target).size };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export interface RestoreResult {
  file: string;
  createdAt: string;
  files: string[];
}

/** Puts a backup's files in place of DATA_DIR's store (no server may run on it: the caller checks). */
export function restoreEmbeddedStore(dataDir: string, source: string): RestoreResult {
  const members = readTar(source);
  const manifest = members.find((member) => member.name === MANIFEST);
  if (!manifest) throw new Error(`${source} is not a backup made by csr backup (it has no ${MANIFEST})`);
  makeDirectory(dataDir);
  const manifestCopy = join(dataDir, `.${MANIFEST}.${process.pid}`);
  rmSync(manifestCopy, { force: true });
  manifest.extract(manifestCopy);
  const { createdAt, format } = JSON.parse(readFileSync(manifestCopy, 'utf8')) as { createdAt: string; format: string };
  rmSync(manifestCopy, { force: true });
  if (format !== 'csr-backup') throw new Error(`${source} is not a backup made by csr backup`);
  const databases = members.filter((member) => member.name.endsWith('.db') && !member.name.includes('/'));
  if (!databases.some((member) => member.name === 'events.db')) throw new Error(`${source} holds no event log: not restored`);
  // Every file is written beside its place first, so a failure here leaves the store as it was.
  for (const member of databases) {
    rmSync(join(dataDir, `${member.name}.restoring`), { force: true });
    member.extract(join(dataDir, `${member.name}.restoring`));
  }
  const restored = new Set(databases.map((member) => member.name));
  for (const name of storeFiles(dataDir)) if (!restored.has(name)) removeDatabase(join(dataDir, name));
  for (const member of databases) {
    const path = join(dataDir, member.name);
    // A WAL left by the replaced file would be replayed into the restored one.
    rmSync(`${path}-wal`, { force: true });
    rmSync(`${path}-shm`, { force: true });
    renameSync(`${path}.restoring`, path);
  }
  return { file: source, createdAt, files: [...restored] };
}

function removeDatabase(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}

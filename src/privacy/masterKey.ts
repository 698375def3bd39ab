import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { KEY_BYTES, newKey } from './cipher.js';

/**
 * The master key wraps every data key. MASTER_KEY_FILE holds it as 64 hex digits; when the
 * variable is unset the key is DATA_DIR/master.key, created (mode 0600) on first start. That is
 * for the embedded store only: on a shared backend every process must open the same data keys,
 * so the key must be given (config.ts, masterKeyRequired) and none is ever made here. Losing it
 * makes every personal value unreadable, so a file that is there but unreadable or malformed is a
 * start-up error, never a silently made new key.
 */

export const DEFAULT_MASTER_KEY_NAME = 'master.key';

export class MasterKeyError extends Error {}

export function masterKeyPath(dataDir: string, masterKeyFile: string | null): string {
  return resolve(masterKeyFile ?? join(dataDir, DEFAULT_MASTER_KEY_NAME));
}

export function loadMasterKey(dataDir: string, masterKeyFile: string | null): Buffer {
  const path = masterKeyPath(dataDir, masterKeyFile);
  if (masterKeyFile === null && !existsSync(path)) {
    const made = createOnce(path);
    if (made) return made;
    // Another process made it a moment ago: read that one.
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new MasterKeyError(`cannot read the master key MASTER_KEY_FILE=${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message} (it must be a file this user can read)`);
  }
  const hex = text.trim();
  if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== KEY_BYTES * 2) {
    throw new MasterKeyError(`the master key MASTER_KEY_FILE=${path} is not a key: it must hold ${KEY_BYTES * 2} hex digits (e.g. made by: openssl rand -hex ${KEY_BYTES})`);
  }
  return Buffer.from(hex, 'hex');
}

/**
 * Writes a new key to a file of its own and links it in under `path` only if nothing is there
 * (link fails when the name exists): a process starting at the same moment sees no key or a whole
 * one, never the empty file an exclusive create shows before its write. Null: another was first.
 */
function createOnce(path: string): Buffer | null {
  const key = newKey();
  const draft = join(dirname(path), `.${DEFAULT_MASTER_KEY_NAME}.${process.pid}.${randomBytes(6).toString('hex')}`);
  try {
    const fd = openSync(draft, 'wx', 0o600);
    try {
      writeSync(fd, `${key.toString('hex')}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(draft, path);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw new MasterKeyError(`cannot create the master key ${path}: ${(error as Error).message} (DATA_DIR must be a folder this user can write)`);
  } finally {
    try {
      unlinkSync(draft);
    } catch {
      // Never made (the open failed).
    }
  }
}

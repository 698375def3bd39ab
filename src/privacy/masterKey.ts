import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { KEY_BYTES, newKey } from './cipher.js';

/**
 * The master key wraps every data key. MASTER_KEY_FILE holds it as 64 hex digits; when the
 * variable is unset the key is DATA_DIR/master.key, created (mode 0600) on first start. Losing it
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
    const key = newKey();
    try {
      writeFileSync(path, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      chmodSync(path, 0o600);
      return key;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new MasterKeyError(`cannot create the master key ${path}: ${(error as Error).message} (DATA_DIR must be a folder this user can write)`);
      }
      // Another process made it a moment ago: read that one.
    }
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

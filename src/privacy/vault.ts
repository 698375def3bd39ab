import { newKey, open, seal } from './cipher.js';
import type { KeyStore } from './port.js';

/**
 * Encryption and key handling in one place: data keys made per record, wrapped by the master
 * key, kept in the key store; personal values sealed under their record's key. A value whose key
 * was deleted (erased) opens as null, never as an error.
 */

/**
 * How a sealed value's place is marked in an event: an object, which no stored value ever is
 * (its value is in the event's sealed box, ./sealing.ts, or, for sealValue, the box itself).
 */
export interface SealedValue {
  $pd: string;
}

export function isSealed(value: unknown): value is SealedValue {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as SealedValue).$pd === 'string';
}

const CHECK_PLAINTEXT = Buffer.from('csr master key check', 'utf8');
const WRAP_AAD = 'data-key:';

export class WrongMasterKey extends Error {}

export class Vault {
  private constructor(
    private readonly master: Buffer,
    readonly keys: KeyStore,
  ) {}

  /** Checks the master key against the one the key store was first used with. */
  static async open(master: Buffer, keys: KeyStore, source: string): Promise<Vault> {
    const check = (await keys.masterCheck()) ?? (await keys.setMasterCheck(seal(master, CHECK_PLAINTEXT, 'master-check')));
    const opened = open(master, check, 'master-check');
    if (!opened || !opened.equals(CHECK_PLAINTEXT)) {
      throw new WrongMasterKey(`the master key ${source} is not the one this store's personal data was encrypted with (restore the right MASTER_KEY_FILE)`);
    }
    return new Vault(master, keys);
  }

  /**
   * Unwrapped keys of records read lately, each with the wrapped form it came from. The key store
   * is still asked on every read (a key deleted by another process must stop opening values at
   * once); this only spares unwrapping the same key again.
   */
  private readonly unwrapped = new Map<string, { wrapped: Buffer; key: Buffer }>();

  /** The data keys of these records that exist (erased ones are absent). */
  async existingKeys(ids: readonly string[]): Promise<Map<string, Buffer>> {
    const wrapped = await this.keys.getMany(ids);
    const keys = new Map<string, Buffer>();
    for (const [id, box] of wrapped) {
      const known = this.unwrapped.get(id);
      if (known && known.wrapped.equals(box)) {
        keys.set(id, known.key);
        continue;
      }
      const key = open(this.master, box, WRAP_AAD + id);
      if (!key) continue;
      keys.set(id, key);
      this.remember(id, box, key);
    }
    for (const id of ids) if (!wrapped.has(id)) this.unwrapped.delete(id);
    return keys;
  }

  private remember(id: string, wrapped: Buffer, key: Buffer): void {
    this.unwrapped.set(id, { wrapped, key });
    if (this.unwrapped.size > 10_000) this.unwrapped.delete(this.unwrapped.keys().next().value!);
  }

  /**
   * The record's data key, made now when it has none (first personal value, or after an erasure).
   * `fresh`: the record is being created, so it surely has none: no look-up first.
   */
  async keyFor(id: string, fresh = false): Promise<Buffer> {
    if (!fresh) {
      const existing = (await this.existingKeys([id])).get(id);
      if (existing) return existing;
    }
    const made = newKey();
    const wrapped = seal(this.master, made, WRAP_AAD + id);
    const kept = await this.keys.create(id, wrapped);
    if (kept === wrapped || kept.equals(wrapped)) {
      this.remember(id, wrapped, made);
      return made;
    }
    const key = open(this.master, kept, WRAP_AAD + id);
    if (!key) throw new WrongMasterKey(`the data key of a record does not open with the master key`);
    return key;
  }

  async deleteKeys(ids: readonly string[]): Promise<number> {
    for (const id of ids) this.unwrapped.delete(id);
    return this.keys.delete(ids);
  }
}

export function sealValue(key: Buffer, recordId: string, field: string, value: unknown): SealedValue {
  return { $pd: seal(key, Buffer.from(JSON.stringify(value), 'utf8'), `${recordId}/${field}`).toString('base64') };
}

/** The value, or undefined when it does not open (its key is gone): the caller shows null. */
export function openValue(key: Buffer | undefined, recordId: string, field: string, sealed: SealedValue): unknown {
  if (!key) return undefined;
  const plain = open(key, Buffer.from(sealed.$pd, 'base64'), `${recordId}/${field}`);
  return plain ? (JSON.parse(plain.toString('utf8')) as unknown) : undefined;
}

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM from Node's crypto, nothing hand-made. A sealed box is iv (12 bytes) | tag (16) |
 * ciphertext. The additional data binds a box to where it belongs (a record and a field), so a
 * box copied into another record or field does not open.
 */

const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_BYTES = 32;

/**
 * Random bytes from Node's CSPRNG, drawn in blocks: one call per block instead of one per IV and
 * key, which a profile of the write path showed costing more than the encryption itself.
 */
const POOL_BYTES = 4096;
let pool = randomBytes(POOL_BYTES);
let used = 0;

function random(bytes: number): Buffer {
  if (used + bytes > POOL_BYTES) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  // A copy: the pool's bytes are never handed out twice, nor kept referenced.
  const out = Buffer.from(pool.subarray(used, used + bytes));
  pool.fill(0, used, used + bytes);
  used += bytes;
  return out;
}

export function newKey(): Buffer {
  return random(KEY_BYTES);
}

export function seal(key: Buffer, plaintext: Buffer, aad: string): Buffer {
  const iv = random(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The plaintext, or null when the box does not open with this key (another key, or altered). */
export function open(key: Buffer, box: Buffer, aad: string): Buffer | null {
  if (box.length < IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, box.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(box.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(box.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    return null;
  }
}

import { hash, randomBytes } from 'node:crypto';

/**
 * API key values (spec 5): shown once when created, only their SHA-256 fingerprint is kept.
 * `csr_` makes a leaked key recognisable (secret scanners, logs); 32 random bytes make it
 * unguessable, so a plain SHA-256 (no salt, no slow hash) is the right fingerprint: it is looked
 * up on every API request.
 */

const PREFIX = 'csr_';

export function generateApiKey(): string {
  return PREFIX + randomBytes(32).toString('base64url');
}

/**
 * Hex SHA-256 of the key value, as stored and as looked up on every request. The one-shot
 * crypto.hash (Node 20.12+) skips the Hash object that createHash builds, on every request.
 */
export function fingerprint(key: string): string {
  return hash('sha256', key, 'hex');
}

import { createHash } from 'node:crypto';

/**
 * A record id derived from a key (a UUID of version 8, RFC 9562, from SHA-256): the records a
 * reaction creates get the same ids every time it runs, so appending them with "no stream yet"
 * makes a replayed or concurrent reaction a no-op instead of a duplicate.
 */
export function derivedId(...parts: string[]): string {
  const hex = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * A Bloom filter of the record keys a generation being built holds: "no" is certain, "maybe" is
 * not. A rebuild's batch looks up every record it changes, and from an empty generation almost
 * every look-up finds nothing; when another connection writes the generation (batchThread.ts),
 * each look-up of the calling thread would probe an index whose cached pages that connection's
 * commits made stale. A "no" from here costs two hashes. Its size is fixed (memory stays flat with
 * the log); past tens of millions of records it answers "maybe" more often, and the look-up runs.
 */

const BITS = 2 ** 25;
const HASHES = 4;

/** Two 32-bit FNV-1a hashes of the key with different offsets, for double hashing. */
function hashes(key: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  // An odd step visits distinct bits for every hash of the key.
  return [a >>> 0, (b | 1) >>> 0];
}

export class IdFilter {
  private readonly bits = new Uint32Array(BITS / 32);

  add(key: string): void {
    const [a, b] = hashes(key);
    for (let i = 0; i < HASHES; i++) {
      const bit = (a + i * b) % BITS;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
  }

  /** False: `add(key)` was never called. True: it may have been. */
  mayHold(key: string): boolean {
    const [a, b] = hashes(key);
    for (let i = 0; i < HASHES; i++) {
      const bit = (a + i * b) % BITS;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

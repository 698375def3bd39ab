import { describe, expect, it } from 'vitest';
import { fingerprint, generateApiKey } from '../../src/setup/apiKeys.js';

describe('API key values and fingerprints', () => {
  it('fingerprints a key as the hex SHA-256 of its UTF-8 bytes, as stores already hold them', () => {
    expect(fingerprint('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(fingerprint('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
  });

  it('generates csr_ keys of 32 random bytes, never the same twice', () => {
    const [a, b] = [generateApiKey(), generateApiKey()];
    expect(a).toMatch(/^csr_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
  });
});

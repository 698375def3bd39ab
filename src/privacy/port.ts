/**
 * The key store: one wrapped data key per record that holds personal values, beside the log (the
 * embedded store's own table; a MongoDB collection in production). Keys are only ever created and
 * deleted: deleting one is the erasure (crypto-shredding). Every adapter passes
 * test/contract/keystore.contract.ts.
 */

export interface KeyStore {
  /** Keeps `wrapped` as the key of `id` unless one exists; answers the key kept (theirs wins a race). */
  create(id: string, wrapped: Buffer): Promise<Buffer>;
  /** The wrapped keys of those ids that have one. */
  getMany(ids: readonly string[]): Promise<Map<string, Buffer>>;
  /** Deletes the keys of these ids (for good); answers how many existed. */
  delete(ids: readonly string[]): Promise<number>;
  /**
   * The master key check: a value sealed by the master key on first use, kept so that a later
   * start with another master key is told at once instead of reading every value as erased.
   */
  masterCheck(): Promise<Buffer | null>;
  setMasterCheck(sealed: Buffer): Promise<Buffer>;
  close(): Promise<void>;
}

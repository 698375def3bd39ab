/**
 * Setup data: workspaces, API keys, users (people). Written by the `csr` tool, read by the API
 * on every request (so revocation takes effect on the next one). Every adapter passes
 * test/contract/setupstore.contract.ts.
 */

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  createdAt: string;
}

export type KeyAccess = 'read-only' | 'read-write';

export interface ApiKey {
  id: string;
  workspaceId: string;
  name: string;
  /** Hex SHA-256 of the key value; the value itself is never stored. */
  fingerprint: string;
  access: KeyAccess;
  /** Object keys the key may access, or 'all'. */
  objects: 'all' | string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** The key's own rate limit as written (`20/s`, src/core/rateLimit.ts); absent: RATE_LIMIT_DEFAULT, if any. */
  rateLimit?: string;
}

export interface User {
  id: string;
  workspaceId: string;
  name: string;
  email: string;
  createdAt: string;
}

export interface SetupStore {
  /** Throws ValidationFailed when the slug is taken. */
  createWorkspace(workspace: Workspace): Promise<void>;
  workspaceBySlug(slug: string): Promise<Workspace | null>;
  workspaceById(id: string): Promise<Workspace | null>;
  /** Every workspace, by creation time (an operator's view: the only read across workspaces). */
  listWorkspaces(): Promise<Workspace[]>;

  createKey(key: ApiKey): Promise<void>;
  keyByFingerprint(fingerprint: string): Promise<ApiKey | null>;
  /**
   * What keyByFingerprint would answer, when the store can tell without waiting (a synchronous
   * driver, or what it remembers and still trusts); undefined when it must be asked. Bound by the
   * same rule as keyByFingerprint: never a key as it was before a revocation or change made
   * through this store (and, within the store's recheck time, through another).
   */
  keyByFingerprintNow(fingerprint: string): ApiKey | null | undefined;
  keyById(id: string): Promise<ApiKey | null>;
  listKeys(workspaceId: string): Promise<ApiKey[]>;
  /** Sets revokedAt (once; revoking again keeps the first time). Null when the key is unknown. */
  revokeKey(id: string, at: string): Promise<ApiKey | null>;
  touchKey(id: string, at: string): Promise<void>;
  /** Gives the key a new name (changes made with it earlier keep the name they were made with). Null when unknown. */
  renameKey(id: string, name: string): Promise<ApiKey | null>;
  /** Sets the key's own rate limit (null: none of its own). Null when the key is unknown. */
  setKeyRateLimit(id: string, rateLimit: string | null): Promise<ApiKey | null>;

  /** Throws ValidationFailed when the email is already used in the workspace (case-insensitive). */
  addUser(user: User): Promise<void>;
  listUsers(workspaceId: string): Promise<User[]>;

  close(): Promise<void>;
}

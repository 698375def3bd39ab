import type Database from 'better-sqlite3';
import { ValidationFailed } from '../../core/errors.js';
import { BOUND_VALUE, changeSchema, openSqliteFile } from '../../sqlite/file.js';
import { Sqlite } from '../../sqlite/driver.js';
import type { ApiKey, KeyAccess, SetupStore, User, Workspace } from '../port.js';

/**
 * The embedded setup store (better-sqlite3). Setup data cannot be rebuilt from anything, so
 * every change is fsynced (WAL, synchronous=FULL); the one exception is `touchKey`, which runs on
 * API requests: it uses its own connection with synchronous=NORMAL (still atomic and
 * consistent, at worst the newest lastUsedAt is lost on a power cut).
 *
 * The `csr` tool and the server open the same file at the same time; both see each other's
 * commits on their next statement (a remembered key: within KEY_RECHECK_MS, see KeyCache).
 *
 * keyByFingerprint runs on every API request, so found keys are remembered, but only while the
 * file is unchanged: see KeyCache.
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS workspaces (
  id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  name TEXT NOT NULL,
  fingerprint TEXT NOT NULL UNIQUE,
  access TEXT NOT NULL CHECK (access IN ('read-only', 'read-write')),
  objects TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at TEXT,
  rate_limit TEXT
);
CREATE INDEX IF NOT EXISTS api_keys_by_workspace ON api_keys (workspace_id, created_at);

CREATE TABLE IF NOT EXISTS users (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  name TEXT NOT NULL,
  email TEXT NOT NULL,
  email_key TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (workspace_id, email_key)
);
`;

interface KeyRow {
  id: string;
  workspace_id: string;
  name: string;
  fingerprint: string;
  access: KeyAccess;
  objects: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  rate_limit: string | null;
}

interface UserRow {
  id: string;
  workspace_id: string;
  name: string;
  email: string;
  created_at: string;
}

interface WorkspaceRow {
  id: string;
  slug: string;
  name: string;
  created_at: string;
}

function toWorkspace(row: WorkspaceRow | undefined): Workspace | null {
  return row ? { id: row.id, slug: row.slug, name: row.name, createdAt: row.created_at } : null;
}

function toKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    fingerprint: row.fingerprint,
    access: row.access,
    objects: JSON.parse(row.objects) as ApiKey['objects'],
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    ...(row.rate_limit === null ? {} : { rateLimit: row.rate_limit }),
  };
}

function toUser(row: UserRow): User {
  return { id: row.id, workspaceId: row.workspace_id, name: row.name, email: row.email, createdAt: row.created_at };
}

/**
 * Turns SQLite's constraint failures into ValidationFailed: `unique` names the message for a
 * taken value per "table.column" that SQLite reports.
 */
function constraintError(error: unknown, workspaceId: string, unique: Record<string, string>): unknown {
  if (!(error instanceof Sqlite.SqliteError)) return error;
  if (error.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new ValidationFailed(`workspace ${workspaceId} does not exist`);
  if (error.code === 'SQLITE_CONSTRAINT_UNIQUE' || error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const column = Object.keys(unique).find((name) => error.message.includes(name));
    return new ValidationFailed(column ? unique[column]! : error.message);
  }
  return error;
}

/** At most this many keys are remembered; more distinct keys in use just mean more lookups. */
const KEY_CACHE_SIZE = 1_000;
/** How long a lookup trusts that no other process changed the file: the log watcher's shortest poll. */
export const KEY_RECHECK_MS = 2;

/**
 * Keys by fingerprint, valid while the setup file is unchanged. The store's own connection counts
 * its writes, checked on every lookup: a revocation through this store (this process) takes
 * effect on the next request. `PRAGMA data_version` changes whenever another connection commits
 * to the file (the `csr` tool in another process, or this store's touch connection); reading it
 * opens a read transaction on the file, the largest cost of authenticating a request, so it is
 * read at most every KEY_RECHECK_MS: a revocation by another process takes effect within that
 * time, as other processes' appends reach this one's log watcher within one poll. Either change
 * drops every entry.
 */
class KeyCache {
  private readonly keys = new Map<string, ApiKey>();
  private readonly dataVersion: Database.Statement<[], number>;
  private seenVersion = -1;
  private seenWrites = -1;
  private checkedAt = -Infinity;
  /** Bumped by every write on the store's own connection. */
  writes = 0;

  constructor(db: Database.Database) {
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  }

  get(fingerprint: string): ApiKey | undefined {
    const now = performance.now();
    if (this.writes !== this.seenWrites || now - this.checkedAt >= KEY_RECHECK_MS) {
      const version = this.dataVersion.get()!;
      this.checkedAt = now;
      if (version !== this.seenVersion || this.writes !== this.seenWrites) {
        this.keys.clear();
        this.seenVersion = version;
        this.seenWrites = this.writes;
      }
    }
    return this.keys.get(fingerprint);
  }

  /** Call right after get() missed, with the row read then. */
  remember(key: ApiKey): void {
    if (this.keys.size >= KEY_CACHE_SIZE) this.keys.clear();
    this.keys.set(key.fingerprint, key);
  }
}

export function openSqliteSetupStore(options: { path: string }): SetupStore {
  const db = openSqliteFile(options.path, { synchronous: 'FULL' });
  changeSchema(db, () => {
    // Files made before rate limits: the column is added once (CREATE TABLE IF NOT EXISTS leaves them as they are).
    const columns = db.prepare("SELECT name FROM pragma_table_info('api_keys')").pluck().all() as string[];
    if (columns.length > 0 && !columns.includes('rate_limit')) db.exec('ALTER TABLE api_keys ADD COLUMN rate_limit TEXT');
    db.exec(SCHEMA);
  });
  const touchDb = openSqliteFile(options.path, { synchronous: 'NORMAL' });
  const keyCache = new KeyCache(db);
  /** Runs a write on the main connection and tells the key cache about it. */
  const written = <T>(write: () => T): T => {
    try {
      return write();
    } finally {
      keyCache.writes++;
    }
  };

  const insertWorkspace = db.prepare('INSERT INTO workspaces (id, slug, name, created_at) VALUES (?, ?, ?, ?)');
  const workspaceBySlug = db.prepare('SELECT * FROM workspaces WHERE slug = ?');
  const workspaceById = db.prepare('SELECT * FROM workspaces WHERE id = ?');
  const listWorkspaces = db.prepare('SELECT * FROM workspaces ORDER BY created_at, rowid');
  const insertKey = db.prepare(
    `INSERT INTO api_keys (id, workspace_id, name, fingerprint, access, objects, created_at, last_used_at, revoked_at, rate_limit)
     VALUES (@id, @workspaceId, @name, @fingerprint, @access, @objects, @createdAt, @lastUsedAt, @revokedAt, @rateLimit)`,
  );
  const keyByFingerprint = db.prepare('SELECT * FROM api_keys WHERE fingerprint = ?');
  const keyById = db.prepare('SELECT * FROM api_keys WHERE id = ?');
  const listKeys = db.prepare(`SELECT * FROM api_keys WHERE workspace_id = ${BOUND_VALUE} ORDER BY created_at, rowid`);
  const revokeKey = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
  const renameKey = db.prepare('UPDATE api_keys SET name = ? WHERE id = ?');
  const setRateLimit = db.prepare('UPDATE api_keys SET rate_limit = ? WHERE id = ?');
  // Only ever moves lastUsedAt forward, and writes nothing when it would not change.
  const touchKey = touchDb.prepare('UPDATE api_keys SET last_used_at = @at WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @at)');
  const insertUser = db.prepare(
    'INSERT INTO users (id, workspace_id, name, email, email_key, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const listUsers = db.prepare(`SELECT * FROM users WHERE workspace_id = ${BOUND_VALUE} ORDER BY created_at, rowid`);

  /** better-sqlite3 answers synchronously: the API's authentication needs no await (keyByFingerprintNow). */
  function keyNow(fingerprint: string): ApiKey | null {
    const cached = keyCache.get(fingerprint);
    if (cached) return cached;
    const row = keyByFingerprint.get(fingerprint) as KeyRow | undefined;
    if (!row) return null;
    const key = toKey(row);
    keyCache.remember(key);
    return key;
  }

  const rename = db.transaction((id: string, name: string): ApiKey | null => {
    renameKey.run(name, id);
    const row = keyById.get(id) as KeyRow | undefined;
    return row ? toKey(row) : null;
  });

  const limit = db.transaction((id: string, rateLimit: string | null): ApiKey | null => {
    setRateLimit.run(rateLimit, id);
    const row = keyById.get(id) as KeyRow | undefined;
    return row ? toKey(row) : null;
  });

  const revoke = db.transaction((id: string, at: string): ApiKey | null => {
    revokeKey.run(at, id);
    const row = keyById.get(id) as KeyRow | undefined;
    return row ? toKey(row) : null;
  });

  return {
    async createWorkspace(workspace) {
      try {
        written(() => insertWorkspace.run(workspace.id, workspace.slug, workspace.name, workspace.createdAt));
      } catch (error) {
        throw constraintError(error, workspace.id, {
          'workspaces.slug': `the workspace slug "${workspace.slug}" is already taken`,
          'workspaces.id': `a workspace with id ${workspace.id} already exists`,
        });
      }
    },

    async listWorkspaces() {
      return (listWorkspaces.all() as WorkspaceRow[]).map((row) => toWorkspace(row)!);
    },

    async workspaceBySlug(slug) {
      return toWorkspace(workspaceBySlug.get(slug) as WorkspaceRow | undefined);
    },

    async workspaceById(id) {
      return toWorkspace(workspaceById.get(id) as WorkspaceRow | undefined);
    },

    async createKey(key) {
      try {
        written(() => insertKey.run({ ...key, objects: JSON.stringify(key.objects), rateLimit: key.rateLimit ?? null }));
      } catch (error) {
        throw constraintError(error, key.workspaceId, {
          'api_keys.fingerprint': 'an API key with this fingerprint already exists',
          'api_keys.id': `an API key with id ${key.id} already exists`,
        });
      }
    },

    async keyByFingerprint(fingerprint) {
      return keyNow(fingerprint);
    },

    keyByFingerprintNow: keyNow,

    async keyById(id) {
      const row = keyById.get(id) as KeyRow | undefined;
      return row ? toKey(row) : null;
    },

    async listKeys(workspaceId) {
      return (listKeys.all(workspaceId) as KeyRow[]).map(toKey);
    },

    async revokeKey(id, at) {
      return written(() => revoke.immediate(id, at));
    },

    async renameKey(id, name) {
      return written(() => rename.immediate(id, name));
    },

    async setKeyRateLimit(id, rateLimit) {
      return written(() => limit.immediate(id, rateLimit));
    },

    async touchKey(id, at) {
      touchKey.run({ at, id });
    },

    async addUser(user) {
      try {
        written(() => insertUser.run(user.id, user.workspaceId, user.name, user.email, user.email.toLowerCase(), user.createdAt));
      } catch (error) {
        throw constraintError(error, user.workspaceId, {
          'users.workspace_id, users.email_key': `a user with the email ${user.email} already exists in this workspace`,
          'users.id': `a user with id ${user.id} already exists`,
        });
      }
    },

    async listUsers(workspaceId) {
      return (listUsers.all(workspaceId) as UserRow[]).map(toUser);
    },

    async close() {
      touchDb.close();
      db.close();
    },
  };
}

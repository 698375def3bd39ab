import { ValidationFailed } from '../../core/errors.js';
import { mappingPostgresErrors } from '../../postgres/errors.js';
import { migrate } from '../../postgres/migrate.js';
import type { Pool } from '../../postgres/pool.js';
import type { ApiKey, KeyAccess, SetupStore, User, Workspace } from '../port.js';
import { KeyCache, KEYS_CHANNEL } from './keyCache.js';

/**
 * Setup data on PostgreSQL: workspaces (unique slug), API keys (unique fingerprint) and users
 * (unique lower-cased email per workspace), with foreign keys to their workspace. Uniqueness is
 * the server's constraints, so concurrent `csr` runs on any machine cannot make duplicates.
 * Lists are in creation order, ties in insertion order (`seq`), as the embedded store's rowid.
 * Times are the port's ISO strings in the C collation (they order as text, whatever the locale).
 * Keys are remembered by fingerprint only while this process listens for key changes, which every
 * change announces (./keyCache.ts): a revocation made by any process takes effect as soon as its
 * commit is delivered.
 */

const MIGRATION = {
  component: 'SetupStore',
  steps: [
    `CREATE TABLE csr_workspaces (
       id         text PRIMARY KEY,
       seq        bigserial NOT NULL,
       slug       text NOT NULL CONSTRAINT csr_workspaces_slug UNIQUE,
       name       text NOT NULL,
       created_at text COLLATE "C" NOT NULL
     )`,
    'CREATE INDEX csr_workspaces_created ON csr_workspaces (created_at, seq)',
    `CREATE TABLE csr_api_keys (
       id           text PRIMARY KEY,
       seq          bigserial NOT NULL,
       workspace_id text NOT NULL REFERENCES csr_workspaces (id),
       name         text NOT NULL,
       fingerprint  text NOT NULL CONSTRAINT csr_api_keys_fingerprint UNIQUE,
       access       text NOT NULL,
       objects      jsonb NOT NULL,
       created_at   text COLLATE "C" NOT NULL,
       last_used_at text COLLATE "C",
       revoked_at   text COLLATE "C"
     )`,
    'CREATE INDEX csr_api_keys_workspace ON csr_api_keys (workspace_id, created_at, seq)',
    `CREATE TABLE csr_users (
       id           text PRIMARY KEY,
       seq          bigserial NOT NULL,
       workspace_id text NOT NULL REFERENCES csr_workspaces (id),
       name         text NOT NULL,
       email        text NOT NULL,
       email_key    text NOT NULL,
       created_at   text COLLATE "C" NOT NULL,
       CONSTRAINT csr_users_email UNIQUE (workspace_id, email_key)
     )`,
    'CREATE INDEX csr_users_workspace ON csr_users (workspace_id, created_at, seq)',
    // A key's own rate limit as written (`20/s`); null: RATE_LIMIT_DEFAULT, if any.
    'ALTER TABLE csr_api_keys ADD COLUMN rate_limit text',
  ],
};

interface WorkspaceRow {
  id: string;
  slug: string;
  name: string;
  created_at: string;
}

interface KeyRow {
  id: string;
  workspace_id: string;
  name: string;
  fingerprint: string;
  access: KeyAccess;
  objects: 'all' | string[];
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

const workspaceFrom = (row: WorkspaceRow): Workspace => ({ id: row.id, slug: row.slug, name: row.name, createdAt: row.created_at });

const keyFrom = (row: KeyRow): ApiKey => ({
  id: row.id,
  workspaceId: row.workspace_id,
  name: row.name,
  fingerprint: row.fingerprint,
  access: row.access,
  objects: row.objects,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
  ...(row.rate_limit === null ? {} : { rateLimit: row.rate_limit }),
});

const userFrom = (row: UserRow): User => ({ id: row.id, workspaceId: row.workspace_id, name: row.name, email: row.email, createdAt: row.created_at });

/** "Already used in the workspace" is case-insensitive. */
export const emailKey = (email: string): string => email.toLowerCase();

/** The server's constraint failures as the port's ValidationFailed, with the message a person reads. */
function refusal(error: unknown, messages: Record<string, string>, workspaceId?: string): unknown {
  const e = error as { code?: unknown; constraint?: unknown };
  if (e.code === '23505' && typeof e.constraint === 'string' && messages[e.constraint]) return new ValidationFailed(messages[e.constraint]!);
  if (e.code === '23503' && workspaceId !== undefined) return new ValidationFailed(`workspace ${workspaceId} does not exist`);
  return error;
}

export async function openPostgresSetupStore(options: { pool: Pool }): Promise<SetupStore> {
  const { pool } = options;
  await migrate(pool, MIGRATION);

  const one = async <Row>(sql: string, values: unknown[]): Promise<Row | null> => {
    const result = await pool.query(sql, values);
    return (result.rows[0] as Row | undefined) ?? null;
  };
  const all = async <Row>(sql: string, values: unknown[]): Promise<Row[]> => (await pool.query(sql, values)).rows as Row[];
  const keyCache = new KeyCache(pool);
  /** One key's change, announced to every listening process at commit, and dropped from this one's cache. */
  const changeKey = async (set: string, values: unknown[]): Promise<ApiKey | null> => {
    try {
      const row = await one<KeyRow>(
        `WITH changed AS (UPDATE csr_api_keys SET ${set} WHERE id = $1 RETURNING *) SELECT changed.*, pg_notify('${KEYS_CHANNEL}', '') FROM changed`,
        values,
      );
      return row && keyFrom(row);
    } finally {
      keyCache.changed();
    }
  };

  return mappingPostgresErrors<SetupStore>({
    async createWorkspace(workspace) {
      try {
        await pool.query('INSERT INTO csr_workspaces (id, slug, name, created_at) VALUES ($1, $2, $3, $4)', [
          workspace.id,
          workspace.slug,
          workspace.name,
          workspace.createdAt,
        ]);
      } catch (error) {
        throw refusal(error, { csr_workspaces_slug: `workspace slug "${workspace.slug}" is already taken` });
      }
    },

    async workspaceBySlug(slug) {
      const row = await one<WorkspaceRow>('SELECT * FROM csr_workspaces WHERE slug = $1', [slug]);
      return row && workspaceFrom(row);
    },

    async workspaceById(id) {
      const row = await one<WorkspaceRow>('SELECT * FROM csr_workspaces WHERE id = $1', [id]);
      return row && workspaceFrom(row);
    },

    async listWorkspaces() {
      return (await all<WorkspaceRow>('SELECT * FROM csr_workspaces ORDER BY created_at, seq', [])).map(workspaceFrom);
    },

    async createKey(key) {
      try {
        await pool.query(
          `INSERT INTO csr_api_keys (id, workspace_id, name, fingerprint, access, objects, created_at, last_used_at, revoked_at, rate_limit)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          [key.id, key.workspaceId, key.name, key.fingerprint, key.access, JSON.stringify(key.objects), key.createdAt, key.lastUsedAt, key.revokedAt, key.rateLimit ?? null],
        );
      } catch (error) {
        throw refusal(error, { csr_api_keys_fingerprint: 'an API key with this fingerprint already exists' }, key.workspaceId);
      }
    },

    keyByFingerprint(fingerprint) {
      return keyCache.lookUp(fingerprint, async () => {
        const row = await one<KeyRow>('SELECT * FROM csr_api_keys WHERE fingerprint = $1', [fingerprint]);
        return row && keyFrom(row);
      });
    },

    keyByFingerprintNow(fingerprint) {
      return keyCache.get(fingerprint);
    },

    async keyById(id) {
      const row = await one<KeyRow>('SELECT * FROM csr_api_keys WHERE id = $1', [id]);
      return row && keyFrom(row);
    },

    async listKeys(workspaceId) {
      return (await all<KeyRow>('SELECT * FROM csr_api_keys WHERE workspace_id = $1 ORDER BY created_at, seq', [workspaceId])).map(keyFrom);
    },

    async revokeKey(id, at) {
      // Only the first revocation sets the time; later ones answer the key as it is.
      return changeKey('revoked_at = COALESCE(revoked_at, $2)', [id, at]);
    },

    async touchKey(id, at) {
      // Only ever moves forward: requests of several processes may report out of order.
      await pool.query('UPDATE csr_api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)', [id, at]);
    },

    async setKeyRateLimit(id, rateLimit) {
      return changeKey('rate_limit = $2', [id, rateLimit]);
    },

    async renameKey(id, name) {
      return changeKey('name = $2', [id, name]);
    },

    async addUser(user) {
      try {
        await pool.query('INSERT INTO csr_users (id, workspace_id, name, email, email_key, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
          user.id,
          user.workspaceId,
          user.name,
          user.email,
          emailKey(user.email),
          user.createdAt,
        ]);
      } catch (error) {
        throw refusal(error, { csr_users_email: `email "${user.email}" is already used in this workspace` }, user.workspaceId);
      }
    },

    async listUsers(workspaceId) {
      return (await all<UserRow>('SELECT * FROM csr_users WHERE workspace_id = $1 ORDER BY created_at, seq', [workspaceId])).map(userFrom);
    },

    // The pool is the process's, shared by every adapter: its owner ends it.
    async close() {
      keyCache.close();
    },
  });
}

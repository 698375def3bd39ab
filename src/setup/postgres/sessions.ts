import { mappingPostgresErrors } from '../../postgres/errors.js';
import { migrate } from '../../postgres/migrate.js';
import type { Pool } from '../../postgres/pool.js';
import type { LinkUse, Session, SessionActor, SessionStore, SignInLink } from '../sessionPort.js';

/**
 * Setup page sign-ins on PostgreSQL. Times are kept as the ISO strings the port passes (in the C
 * collation they compare in time order as text, whatever the database's locale), so a link or session reads back exactly as it was written.
 * A link is used by one conditional UPDATE, so of two concurrent uses exactly one changes the row.
 */

const MIGRATION = {
  component: 'SessionStore',
  steps: [
    `CREATE TABLE csr_sign_in_links (
       token_hash   text PRIMARY KEY,
       workspace_id text NOT NULL,
       actor        jsonb NOT NULL,
       created_at   text COLLATE "C" NOT NULL,
       expires_at   text COLLATE "C" NOT NULL,
       used_at      text COLLATE "C"
     )`,
    `CREATE TABLE csr_sessions (
       id_hash      text PRIMARY KEY,
       workspace_id text NOT NULL,
       actor        jsonb NOT NULL,
       created_at   text COLLATE "C" NOT NULL,
       last_seen_at text COLLATE "C" NOT NULL
     )`,
  ],
};

interface LinkRow {
  token_hash: string;
  workspace_id: string;
  actor: SessionActor;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

interface SessionRow {
  id_hash: string;
  workspace_id: string;
  actor: SessionActor;
  created_at: string;
  last_seen_at: string;
}

const actorOf = (actor: SessionActor): SessionActor => ({ id: actor.id, name: actor.name });

const toLink = (row: LinkRow): SignInLink => ({
  tokenHash: row.token_hash,
  workspaceId: row.workspace_id,
  actor: actorOf(row.actor),
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  usedAt: row.used_at,
});

const toSession = (row: SessionRow): Session => ({
  idHash: row.id_hash,
  workspaceId: row.workspace_id,
  actor: actorOf(row.actor),
  createdAt: row.created_at,
  lastSeenAt: row.last_seen_at,
});

export async function openPostgresSessionStore(options: { pool: Pool }): Promise<SessionStore> {
  const { pool } = options;
  await migrate(pool, MIGRATION);

  return mappingPostgresErrors<SessionStore>({
    async createLink(link) {
      await pool.query('INSERT INTO csr_sign_in_links VALUES ($1, $2, $3, $4, $5, $6)', [
        link.tokenHash,
        link.workspaceId,
        JSON.stringify(actorOf(link.actor)),
        link.createdAt,
        link.expiresAt,
        link.usedAt,
      ]);
    },
    async useLink(tokenHash, at): Promise<LinkUse> {
      const used = await pool.query<LinkRow>(
        'UPDATE csr_sign_in_links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING *',
        [tokenHash, at],
      );
      if (used.rows[0]) return { ok: true, link: toLink(used.rows[0]) };
      const found = await pool.query<LinkRow>('SELECT * FROM csr_sign_in_links WHERE token_hash = $1', [tokenHash]);
      const row = found.rows[0];
      if (!row) return { ok: false, reason: 'unknown' };
      return { ok: false, reason: row.used_at !== null ? 'used' : 'expired' };
    },
    async createSession(session) {
      await pool.query('INSERT INTO csr_sessions VALUES ($1, $2, $3, $4, $5)', [
        session.idHash,
        session.workspaceId,
        JSON.stringify(actorOf(session.actor)),
        session.createdAt,
        session.lastSeenAt,
      ]);
    },
    async touchSession(idHash, at, idleSince) {
      const seen = await pool.query<SessionRow>(
        'UPDATE csr_sessions SET last_seen_at = $2 WHERE id_hash = $1 AND last_seen_at > $3 RETURNING *',
        [idHash, at, idleSince],
      );
      if (seen.rows[0]) return toSession(seen.rows[0]);
      // Unknown, or idle too long: ended, so that it cannot come back to life.
      await pool.query('DELETE FROM csr_sessions WHERE id_hash = $1 AND last_seen_at <= $2', [idHash, idleSince]);
      return null;
    },
    async endSession(idHash) {
      await pool.query('DELETE FROM csr_sessions WHERE id_hash = $1', [idHash]);
    },
    // The pool is the process's, shared by every adapter: its owner ends it.
    async close() {},
  });
}

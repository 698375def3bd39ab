import { applySchema, openSqliteFile } from '../../sqlite/file.js';
import type { LinkUse, Session, SessionActor, SessionStore, SignInLink } from '../sessionPort.js';

/**
 * Setup page sign-ins in their own file (`sessions.db` in DATA_DIR): a session is written on
 * every page request, and in `setup.db` that write would make the API's key cache start over.
 * Losing this file signs people out, nothing more, so commits are not fsynced one by one.
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sign_in_links (
  token_hash TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  actor TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
CREATE TABLE IF NOT EXISTS sessions (
  id_hash TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  actor TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL
);
`;

interface LinkRow {
  token_hash: string;
  workspace_id: string;
  actor: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

interface SessionRow {
  id_hash: string;
  workspace_id: string;
  actor: string;
  created_at: string;
  last_seen_at: string;
}

const toLink = (row: LinkRow): SignInLink => ({
  tokenHash: row.token_hash,
  workspaceId: row.workspace_id,
  actor: JSON.parse(row.actor) as SessionActor,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  usedAt: row.used_at,
});

const toSession = (row: SessionRow): Session => ({
  idHash: row.id_hash,
  workspaceId: row.workspace_id,
  actor: JSON.parse(row.actor) as SessionActor,
  createdAt: row.created_at,
  lastSeenAt: row.last_seen_at,
});

export function openSqliteSessionStore(options: { path: string }): SessionStore {
  const db = openSqliteFile(options.path, { synchronous: 'NORMAL' });
  applySchema(db, SCHEMA);
  const insertLink = db.prepare('INSERT INTO sign_in_links VALUES (?, ?, ?, ?, ?, ?)');
  const linkByHash = db.prepare<[string], LinkRow>('SELECT * FROM sign_in_links WHERE token_hash = ?');
  const markUsed = db.prepare('UPDATE sign_in_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?');
  const insertSession = db.prepare('INSERT INTO sessions VALUES (?, ?, ?, ?, ?)');
  const seen = db.prepare('UPDATE sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at > ?');
  const sessionByHash = db.prepare<[string], SessionRow>('SELECT * FROM sessions WHERE id_hash = ?');
  const endSession = db.prepare('DELETE FROM sessions WHERE id_hash = ?');

  // One transaction: the check and the mark cannot interleave with another process's use.
  const useLink = db.transaction((tokenHash: string, at: string): LinkUse => {
    const row = linkByHash.get(tokenHash);
    if (!row) return { ok: false, reason: 'unknown' };
    if (markUsed.run(at, tokenHash, at).changes === 1) return { ok: true, link: toLink({ ...row, used_at: at }) };
    return { ok: false, reason: row.used_at !== null ? 'used' : 'expired' };
  });
  const touch = db.transaction((idHash: string, at: string, idleSince: string): Session | null => {
    if (seen.run(at, idHash, idleSince).changes === 1) return toSession(sessionByHash.get(idHash)!);
    endSession.run(idHash);
    return null;
  });

  return {
    async createLink(link) {
      insertLink.run(link.tokenHash, link.workspaceId, JSON.stringify(link.actor), link.createdAt, link.expiresAt, link.usedAt);
    },
    async useLink(tokenHash, at) {
      return useLink.immediate(tokenHash, at);
    },
    async createSession(session) {
      insertSession.run(session.idHash, session.workspaceId, JSON.stringify(session.actor), session.createdAt, session.lastSeenAt);
    },
    async touchSession(idHash, at, idleSince) {
      return touch.immediate(idHash, at, idleSince);
    },
    async endSession(idHash) {
      endSession.run(idHash);
    },
    async close() {
      if (db.open) db.close();
    },
  };
}

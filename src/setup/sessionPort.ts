/**
 * Sign-in to the Setup page: one-time links and the sessions they open. Only SHA-256 hashes of
 * the link tokens and session ids are stored, so a copy of the store signs no one in. Every
 * adapter passes test/contract/sessionstore.contract.ts.
 */

/** Who makes the page's changes: a user of the workspace, or the operator who made the link. */
export interface SessionActor {
  id: string;
  name: string;
}

export interface SignInLink {
  /** Hex SHA-256 of the token in the link. */
  tokenHash: string;
  workspaceId: string;
  actor: SessionActor;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
}

export interface Session {
  /** Hex SHA-256 of the id in the cookie. */
  idHash: string;
  workspaceId: string;
  actor: SessionActor;
  createdAt: string;
  lastSeenAt: string;
}

export type LinkUse = { ok: true; link: SignInLink } | { ok: false; reason: 'unknown' | 'used' | 'expired' };

export interface SessionStore {
  createLink(link: SignInLink): Promise<void>;
  /**
   * Marks the link used at `at`, once: of two concurrent uses exactly one succeeds. A link past
   * its expiresAt is refused (and stays unused).
   */
  useLink(tokenHash: string, at: string): Promise<LinkUse>;
  createSession(session: Session): Promise<void>;
  /**
   * The session when it was last seen after `idleSince`, then seen again at `at`; null when it is
   * unknown, ended, or idle too long (then it is ended).
   */
  touchSession(idHash: string, at: string, idleSince: string): Promise<Session | null>;
  endSession(idHash: string): Promise<void>;
  close(): Promise<void>;
}

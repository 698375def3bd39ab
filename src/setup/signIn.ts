import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { NotFound, Unauthorized } from '../core/errors.js';
import type { Session, SessionActor, SessionStore } from './sessionPort.js';
import type { SetupStore, Workspace } from './port.js';

/**
 * Sign-in to the Setup page (issue 30): `csr setup link` makes a one-time link valid for
 * LINK_TTL_MS; opening it opens a session bound to the workspace and the person, which ends
 * after SESSION_IDLE_MS without a request, or at sign-out. Tokens and session ids are 32 random
 * bytes; only their SHA-256 hashes are stored. The CSRF token of a session is derived from its id,
 * so it needs no storage and no one without the cookie can compute it.
 */

export const LINK_TTL_MS = 15 * 60_000;
export const SESSION_IDLE_MS = 8 * 3_600_000;

export interface SignedIn {
  session: Session;
  workspace: Workspace;
  csrfToken: string;
}

const hash = (value: string) => createHash('sha256').update(value).digest('hex');
const newToken = () => randomBytes(32).toString('base64url');

export function csrfTokenFor(sessionId: string): string {
  return createHash('sha256').update(`csrf\0${sessionId}`).digest('base64url');
}

export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const REFUSED: Record<'unknown' | 'used' | 'expired', string> = {
  unknown: 'this sign-in link is not valid; ask for a new one (csr setup link)',
  used: 'this sign-in link was already used; each link signs in once: ask for a new one (csr setup link)',
  expired: 'this sign-in link has expired (links are valid for 15 minutes); ask for a new one (csr setup link)',
};

export class SignIn {
  private readonly clock: () => Date;

  constructor(private readonly options: { setup: SetupStore; sessions: SessionStore; clock?: () => Date }) {
    this.clock = options.clock ?? (() => new Date());
  }

  /**
   * A link's token for the workspace, acting as its user with `userEmail`, or as `operator` (the
   * person running csr) when none is given.
   */
  async createLink(workspaceSlug: string, userEmail: string | undefined, operator: SessionActor): Promise<{ token: string; expiresAt: string; actor: SessionActor }> {
    const workspace = await this.options.setup.workspaceBySlug(workspaceSlug);
    if (!workspace) throw new NotFound(`workspace "${workspaceSlug}" not found`);
    let actor = operator;
    if (userEmail !== undefined) {
      const user = (await this.options.setup.listUsers(workspace.id)).find((candidate) => candidate.email.toLowerCase() === userEmail.trim().toLowerCase());
      if (!user) throw new NotFound(`no user with the email ${userEmail} in workspace "${workspaceSlug}" (csr users add adds one)`);
      actor = { id: user.id, name: user.name };
    }
    const token = newToken();
    const now = this.clock();
    const expiresAt = new Date(now.getTime() + LINK_TTL_MS).toISOString();
    await this.options.sessions.createLink({ tokenHash: hash(token), workspaceId: workspace.id, actor, createdAt: now.toISOString(), expiresAt, usedAt: null });
    return { token, expiresAt, actor };
  }

  /** Uses the link (once) and opens a session; answers the session id for the cookie. */
  async openLink(token: string): Promise<string> {
    const now = this.clock().toISOString();
    const used = await this.options.sessions.useLink(hash(token), now);
    if (!used.ok) throw new Unauthorized(REFUSED[used.reason]);
    const sessionId = newToken();
    await this.options.sessions.createSession({ idHash: hash(sessionId), workspaceId: used.link.workspaceId, actor: used.link.actor, createdAt: now, lastSeenAt: now });
    return sessionId;
  }

  /** The session of this cookie value, seen now; null when there is none (anymore). */
  async session(sessionId: string): Promise<SignedIn | null> {
    const now = this.clock();
    const idleSince = new Date(now.getTime() - SESSION_IDLE_MS).toISOString();
    const session = await this.options.sessions.touchSession(hash(sessionId), now.toISOString(), idleSince);
    if (!session) return null;
    const workspace = await this.options.setup.workspaceById(session.workspaceId);
    if (!workspace) return null;
    return { session, workspace, csrfToken: csrfTokenFor(sessionId) };
  }

  async signOut(sessionId: string): Promise<void> {
    await this.options.sessions.endSession(hash(sessionId));
  }
}

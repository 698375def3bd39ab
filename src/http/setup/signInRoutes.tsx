import type { Hono } from 'hono';
import { Unauthorized } from '../../core/errors.js';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { refusal } from './errorPage.js';
import { clearSessionCookie, csrfChecked, formLimit, sessionCookie, setSessionCookie, signedInOnly } from './guard.js';
import { Document } from './layout.js';

/**
 * Opening a sign-in link sets the session cookie. The answer is a page that moves on to /setup
 * itself: a SameSite=Strict cookie is not sent on a redirect that began on another site (the
 * mail or chat the link was opened from), but it is on a navigation this page starts.
 */
export function signInRoutes(app: Hono<SetupEnv>, deps: SetupPageDeps): void {
  // The token is in the query, not the path: request logs show paths, and a link must not outlive its use there.
  app.get('/sign-in', async (c) => {
    let sessionId: string;
    try {
      sessionId = await deps.signIn.openLink(c.req.query('token') ?? '');
    } catch (error) {
      if (error instanceof Unauthorized) return refusal(c, 401, 'Sign-in link refused', error.message);
      throw error;
    }
    setSessionCookie(c, sessionId);
    return c.html(
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta http-equiv="refresh" content="0;url=/setup/api" />
          <title>Signed in · Setup</title>
        </head>
        <body>
          <p>
            Signed in. <a href="/setup/api">Continue to Setup</a>
          </p>
        </body>
      </html>,
    );
  });

  app.post('/sign-out', formLimit, signedInOnly(deps), csrfChecked, async (c) => {
    const sessionId = sessionCookie(c);
    if (sessionId !== undefined) await deps.signIn.signOut(sessionId);
    clearSessionCookie(c);
    return c.html(
      <Document title="Signed out">
        <main>
          <h1>Signed out</h1>
          <p>Your session has ended. To come back, ask for a new sign-in link: csr setup link --workspace &lt;slug&gt;.</p>
        </main>
      </Document>,
    );
  });
}

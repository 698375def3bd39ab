import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { sameToken } from '../../setup/signIn.js';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { refusal } from './errorPage.js';

/**
 * What every Setup page request passes through: security headers, the session cookie, and on a
 * POST the CSRF token of that session (a form field). Nothing here knows a Setup rule.
 */

export const SESSION_COOKIE = 'csr_setup';
const FORM_LIMIT_BYTES = 64 * 1024;

/** No inline script or style, no framing, no referrer (a sign-in link must not leak), no caching. */
export const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  c.header('Content-Security-Policy', "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  c.header('X-Frame-Options', 'DENY');
  c.header('Referrer-Policy', 'no-referrer');
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('Cache-Control', 'no-store');
};

/** Served over HTTPS: directly, or behind a proxy that says so. */
function overHttps(c: Context): boolean {
  return new URL(c.req.url).protocol === 'https:' || c.req.header('X-Forwarded-Proto') === 'https';
}

/**
 * A browser-session cookie (no Max-Age): the 8 hours are counted on the server from the last
 * request (SESSION_IDLE_MS), which a fixed cookie lifetime from sign-in would cut short.
 */
export function setSessionCookie(c: Context, sessionId: string): void {
  setCookie(c, SESSION_COOKIE, sessionId, { path: '/setup', httpOnly: true, secure: overHttps(c), sameSite: 'Strict' });
}

export function sessionCookie(c: Context): string | undefined {
  return getCookie(c, SESSION_COOKIE);
}

export function clearSessionCookie(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, { path: '/setup', secure: overHttps(c) });
}

export function signedInOnly(deps: SetupPageDeps): MiddlewareHandler<SetupEnv> {
  return async (c, next) => {
    const sessionId = sessionCookie(c);
    const signedIn = sessionId === undefined ? null : await deps.signIn.session(sessionId);
    if (!signedIn) {
      if (sessionId !== undefined) clearSessionCookie(c);
      return refusal(c, 401, 'Not signed in', 'Your session has ended or you have not signed in yet. Ask for a sign-in link: csr setup link --workspace <slug>.');
    }
    c.set('signedIn', signedIn);
    c.set('services', deps.servicesFor({ type: 'user', id: signedIn.session.actor.id, name: signedIn.session.actor.name }));
    c.header('Vary', 'Cookie');
    await next();
  };
}

export const formLimit = bodyLimit({
  maxSize: FORM_LIMIT_BYTES,
  onError: (c) => refusal(c, 413, 'Form too large', `A Setup form may send at most ${FORM_LIMIT_BYTES / 1024} KB.`),
});

/** Every change is a POST carrying the session's CSRF token; the parsed form is kept for the route. */
export const csrfChecked: MiddlewareHandler<SetupEnv> = async (c, next) => {
  if (c.req.method !== 'POST') return next();
  const form = (await c.req.parseBody({ all: true })) as Record<string, string | string[] | File | File[]>;
  const given = form._csrf;
  if (typeof given !== 'string' || !sameToken(given, c.get('signedIn').csrfToken)) {
    return refusal(c, 403, 'Form refused', 'This form was sent without its security token (or with a stale one), so nothing was changed. Reload the page and send it again.');
  }
  const strings: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(form)) {
    if (typeof value === 'string') strings[name] = value;
    else if (Array.isArray(value)) strings[name] = value.filter((item): item is string => typeof item === 'string');
  }
  c.set('form', strings);
  await next();
};

import type { TestService } from './service.js';
import { SignIn } from '../../src/setup/signIn.js';

/**
 * The Setup page driven in process (`app.request`), as a browser without JavaScript drives it:
 * a sign-in link made as `csr setup link` makes it, its cookie kept, and forms posted with the
 * CSRF token read from the page.
 */

export interface PageResponse {
  status: number;
  html: string;
  headers: Headers;
}

export async function signInLink(svc: TestService, slug: string, options: { email?: string; clock?: () => Date } = {}): Promise<string> {
  const signIn = new SignIn({ setup: svc.service.backends.setup, sessions: svc.service.backends.sessions, ...(options.clock ? { clock: options.clock } : {}) });
  const { token } = await signIn.createLink(slug, options.email, { id: 'operator', name: 'operator' });
  return `/setup/sign-in?token=${token}`;
}

export function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('no CSRF token on the page');
  return match[1]!;
}

export function pageClient(svc: TestService, headers: Record<string, string> = {}) {
  let cookie: string | null = null;
  const send = async (path: string, init: RequestInit = {}): Promise<PageResponse> => {
    const response = await svc.service.app!.request(path, {
      ...init,
      headers: { ...headers, ...(cookie ? { Cookie: cookie } : {}), ...(init.headers as Record<string, string> | undefined) },
    });
    const setCookie = response.headers.get('Set-Cookie');
    if (setCookie) {
      const [pair] = setCookie.split(';');
      cookie = pair!.endsWith('=') ? null : pair!;
    }
    return { status: response.status, html: await response.text(), headers: response.headers };
  };
  return {
    get: (path: string) => send(path),
    /** Posts a form; `csrf: false` leaves the token out. Answers the page (redirects not followed). */
    async post(path: string, fields: Record<string, string | string[]>, options: { csrf?: string | false } = {}): Promise<PageResponse> {
      const body = new URLSearchParams();
      if (options.csrf !== false) body.append('_csrf', options.csrf ?? csrfOf((await send('/setup/api')).html));
      for (const [name, value] of Object.entries(fields)) for (const one of [value].flat()) body.append(name, one);
      return send(path, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: body.toString() });
    },
    get cookie() {
      return cookie;
    },
    set cookie(value: string | null) {
      cookie = value;
    },
  };
}

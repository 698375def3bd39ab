import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../support/service.js';
import { pageClient, signInLink } from '../../support/setupPage.js';

/** Sign-in to the Setup page: one-time links, the session cookie, its idle end and sign-out. */

let now = Date.now();
const clock = () => new Date(now);
let svc: TestService;
let ws: TestWorkspace;

beforeAll(async () => {
  svc = await startTestService({}, { clock });
  ws = await svc.workspace();
  await ws.addUser('Ana Admin', 'ana@example.com');
});
afterAll(() => svc?.stop());

describe('the Setup page sign-in', () => {
  it('a link opens a session: HttpOnly, SameSite=Strict cookie on /setup, not Secure over plain HTTP; the page names the user', async () => {
    const page = pageClient(svc);
    const opened = await page.get(await signInLink(svc, ws.slug, { email: 'ana@example.com' }));
    expect(opened.status).toBe(200);
    const cookie = opened.headers.get('Set-Cookie')!;
    expect(cookie).toMatch(/^csr_setup=[\w-]{43}; Path=\/setup; HttpOnly; SameSite=Strict$/);
    const home = await page.get('/setup/api');
    expect(home.status).toBe(200);
    expect(home.html).toContain('Signed in as Ana Admin');
  });

  it('the cookie is Secure when the page is served over HTTPS (behind a proxy that says so)', async () => {
    const page = pageClient(svc, { 'X-Forwarded-Proto': 'https' });
    const opened = await page.get(await signInLink(svc, ws.slug));
    expect(opened.headers.get('Set-Cookie')).toContain('; Secure');
  });

  it('a link signs in once: opened again it is refused, and so is an unknown one', async () => {
    const link = await signInLink(svc, ws.slug);
    expect((await pageClient(svc).get(link)).status).toBe(200);
    const again = await pageClient(svc).get(link);
    expect(again.status).toBe(401);
    expect(again.html).toContain('already used');
    expect(again.headers.get('Set-Cookie')).toBeNull();
    expect((await pageClient(svc).get('/setup/sign-in')).status).toBe(401);
    const unknown = await pageClient(svc).get('/setup/sign-in?token=not-a-token');
    expect(unknown.status).toBe(401);
    expect(unknown.html).toContain('not valid');
  });

  it('a link older than 15 minutes is refused as expired', async () => {
    const link = await signInLink(svc, ws.slug, { clock: () => new Date(now - 15 * 60_000 - 1) });
    const late = await pageClient(svc).get(link);
    expect(late.status).toBe(401);
    expect(late.html).toContain('expired');
  });

  it('without a session every section answers 401 with how to sign in', async () => {
    for (const path of ['/setup/api', '/setup/objects', '/setup/projections']) {
      const answer = await pageClient(svc).get(path);
      expect(answer.status).toBe(401);
      expect(answer.html).toContain('csr setup link');
    }
  });

  it('a session ends after 8 hours without a request, and not while it is used', async () => {
    const page = pageClient(svc);
    await page.get(await signInLink(svc, ws.slug));
    const start = now;
    try {
      now += 8 * 3_600_000 - 60_000;
      expect((await page.get('/setup/api')).status).toBe(200);
      now += 8 * 3_600_000 - 60_000;
      expect((await page.get('/setup/api')).status).toBe(200);
      now += 8 * 3_600_000 + 1;
      expect((await page.get('/setup/api')).status).toBe(401);
    } finally {
      now = start;
    }
  });

  it('signing out ends the session on the server: the old cookie no longer works', async () => {
    const page = pageClient(svc);
    await page.get(await signInLink(svc, ws.slug));
    const cookie = page.cookie;
    const out = await page.post('/setup/sign-out', {});
    expect(out.status).toBe(200);
    expect(out.html).toContain('Signed out');
    page.cookie = cookie;
    expect((await page.get('/setup/api')).status).toBe(401);
  });
});

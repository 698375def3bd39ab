import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';

/** `csr setup link`: the one-time sign-in link to the Setup page, as an operator makes it. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-setup-link-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const csr = csrTool(dataDir, { PORT: '8123' });

beforeAll(async () => {
  await csr.json('workspaces', 'create', 'acme');
  await csr.json('users', 'add', '--workspace', 'acme', '--name', 'Ana Admin', '--email', 'ana@example.com');
});

describe('csr setup link', () => {
  it('prints a link to this server valid for 15 minutes, acting as the user named by email (any case)', async () => {
    const before = Date.now();
    const link = await csr.json<{ url: string; expiresAt: string; as: string }>('setup', 'link', '--workspace', 'acme', '--user', 'ANA@example.com');
    expect(link.url).toMatch(/^http:\/\/127\.0\.0\.1:8123\/setup\/sign-in\?token=[\w-]{43}$/);
    expect(link.as).toBe('Ana Admin');
    const after = Date.now();
    // 15 minutes from the moment the command ran, whenever that was between `before` and `after`
    // (a bound of seconds around `before` would depend on how fast csr starts).
    expect(Date.parse(link.expiresAt)).toBeGreaterThanOrEqual(before + 15 * 60_000);
    expect(Date.parse(link.expiresAt)).toBeLessThanOrEqual(after + 15 * 60_000);
  });

  it('says in text how long the link works and as whom; each link is new', async () => {
    const first = await csr.run('setup', 'link', '--workspace', 'acme', '--url', 'https://csr.example.com/');
    const second = await csr.run('setup', 'link', '--workspace', 'acme', '--url', 'https://csr.example.com/');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^https:\/\/csr\.example\.com\/setup\/sign-in\?token=[\w-]{43}\nOpen it before .*Z \(it signs in once, as .+\)\.\n$/);
    expect(first.stdout.split('\n')[0]).not.toBe(second.stdout.split('\n')[0]);
  });

  it('refuses an unknown workspace or user, and a --url that is not an address', async () => {
    expect(await csr.fails(1, 'setup', 'link', '--workspace', 'nope')).toContain('workspace "nope" not found');
    expect(await csr.fails(1, 'setup', 'link', '--workspace', 'acme', '--user', 'bob@example.com')).toContain('no user with the email bob@example.com');
    expect(await csr.fails(2, 'setup', 'link', '--workspace', 'acme', '--url', 'not a url')).toContain('--url must be the address');
    expect(await csr.fails(2, 'setup', 'link')).toContain('missing option --workspace');
  });
});

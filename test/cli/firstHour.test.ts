import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer } from '../support/process.js';

/** What a new user meets in the first hour: where the store is, the commands they expect, clear errors. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-first-'));
const csr = csrTool(dataDir);
const slug = () => `first-${randomUUID().slice(0, 8)}`;

describe('the store csr works on', () => {
  it('says once that it created a new store, and where', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'csr-fresh-'));
    const tool = csrTool(join(fresh, 'data'));
    const first = await tool.run('workspaces', 'list', '--json');
    expect(first).toMatchObject({ code: 0, stdout: '[]\n' });
    expect(first.stderr).toBe(`csr: no store in ${join(fresh, 'data')} yet: created a new one there (DATA_DIR chooses another)\n`);
    expect(await tool.run('workspaces', 'list', '--json')).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
  });

  it('names the folder and the reason when DATA_DIR cannot hold a store', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'csr-file-')), 'not-a-folder');
    writeFileSync(file, '');
    const stderr = await csrTool(file).fails(1, 'workspaces', 'list');
    expect(stderr).toMatch(new RegExp(`^csr: cannot use DATA_DIR=${file} for the store: .* \\(it must be a folder this user can write\\)\\n$`));
  });
});

describe('commands a user expects', () => {
  it('workspaces list shows every workspace', async () => {
    const created = await csr.json<{ id: string; slug: string }>('workspaces', 'create', slug(), '--name', 'Listed Inc');
    const listed = await csr.json<{ id: string; slug: string; name: string }[]>('workspaces', 'list');
    expect(listed).toContainEqual(expect.objectContaining({ id: created.id, slug: created.slug, name: 'Listed Inc' }));
  });

  it('users list shows the users of one workspace', async () => {
    const ws = slug();
    await csr.json('workspaces', 'create', ws);
    const ana = await csr.json<{ id: string }>('users', 'add', '--workspace', ws, '--name', 'Ana Lima', '--email', 'ana@x.test');
    expect(await csr.json('users', 'list', '--workspace', ws)).toEqual([{ id: ana.id, name: 'Ana Lima', email: 'ana@x.test', createdAt: expect.any(String) }]);
    expect(await csr.fails(1, 'users', 'list', '--workspace', 'no-such-workspace')).toBe('csr: workspace "no-such-workspace" not found\n');
  });

  it('keys rename gives a key a new name; an empty name or an unknown key is refused', async () => {
    const ws = slug();
    await csr.json('workspaces', 'create', ws);
    const key = await csr.json<{ id: string }>('keys', 'create', '--workspace', ws, '--name', 'Zapier');
    expect(await csr.json('keys', 'rename', key.id, '--name', 'Zapier (old)')).toMatchObject({ id: key.id, name: 'Zapier (old)' });
    expect(await csr.json('keys', 'list', '--workspace', ws)).toEqual([expect.objectContaining({ id: key.id, name: 'Zapier (old)' })]);
    expect(await csr.fails(1, 'keys', 'rename', key.id, '--name', '  ')).toMatch(/^csr: the key name/);
    expect(await csr.fails(1, 'keys', 'rename', '00000000-0000-4000-8000-000000000000', '--name', 'x')).toBe(
      'csr: API key 00000000-0000-4000-8000-000000000000 not found\n',
    );
  });
});

describe('the server says what stops it from starting, in one line', () => {
  const running: { kill(): Promise<void> }[] = [];
  afterAll(async () => Promise.all(running.map((server) => server.kill())));

  it('a port in use: which port, and how to choose another', async () => {
    const first = await spawnServer({ DATA_DIR: mkdtempSync(join(tmpdir(), 'csr-port-')) });
    running.push(first);
    const port = new URL(first.url).port;
    const second = await spawnServer({ DATA_DIR: mkdtempSync(join(tmpdir(), 'csr-port-')), PORT: port }).catch((error: Error) => error);
    expect(second).toBeInstanceOf(Error);
    expect((second as Error).message).toContain(
      `port ${port} on 127.0.0.1 is already in use: stop the program using it, or choose another port with PORT=<number> (PORT=0 picks a free one)\n`,
    );
    expect((second as Error).message).not.toMatch(/\n\s+at /);
  });

  // Each as the operator meets it: one line on stderr naming the variable, no raw system error alone.
  const startFails = async (env: Record<string, string>) => {
    const error = await spawnServer({ DATA_DIR: mkdtempSync(join(tmpdir(), 'csr-start-')), ...env }).catch((failure: Error) => failure);
    expect(error).toBeInstanceOf(Error);
    const stderr = (error as Error).message.replace(/^server exited with \d+: /, '');
    expect(stderr).not.toMatch(/\n\s+at /);
    return stderr;
  };

  it('DATA_DIR that is a file: names DATA_DIR and what it must be', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'csr-file-')), 'not-a-folder');
    writeFileSync(file, '');
    expect(await startFails({ DATA_DIR: file })).toMatch(new RegExp(`^cannot use DATA_DIR=${file} for the store: .* \\(it must be a folder this user can write\\)\\n$`));
  });

  it('DATA_DIR where no folder can be made (under /proc): names DATA_DIR at once, never hangs', async () => {
    // Node's recursive mkdir loops for ever there (every mkdir answers ENOENT).
    const dir = `/proc/csr-nope-${randomUUID()}`;
    expect(await startFails({ DATA_DIR: dir })).toMatch(new RegExp(`^cannot use DATA_DIR=${dir} for the store: E[A-Z]+: .* \\(it must be a folder this user can write\\)\\n$`));
  });

  it('WEBHOOK_CA_FILE that cannot be read: names the variable and what it must be', async () => {
    const missing = join(tmpdir(), `csr-no-ca-${randomUUID()}.pem`);
    expect(await startFails({ WEBHOOK_CA_FILE: missing })).toMatch(new RegExp(`^cannot read WEBHOOK_CA_FILE=${missing}: .* \\(it must be a PEM file of CA certificates this user can read\\)\\n$`));
  });

  it.each([
    ['holds no certificate', 'just some text\n', 'it holds no PEM certificate'],
    ['holds a broken certificate', '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n', 'certificate 1 of 1 cannot be parsed'],
  ])('WEBHOOK_CA_FILE that %s: refused at start, naming the variable', async (_case, content, reason) => {
    const file = join(mkdtempSync(join(tmpdir(), 'csr-ca-')), 'ca.pem');
    writeFileSync(file, content);
    const message = await startFails({ WEBHOOK_CA_FILE: file });
    expect(message).toBe(`cannot read WEBHOOK_CA_FILE=${file}: ${reason} (it must be a PEM file of CA certificates this user can read)\n`);
  });

  it('HOST that is no address of this machine: names HOST', async () => {
    // A documentation address (RFC 5737): no machine has it, and no DNS lookup is involved.
    expect(await startFails({ HOST: '192.0.2.1' })).toMatch(/^cannot listen on HOST=192\.0\.2\.1: EADDRNOTAVAIL \(use an address of this machine, .*\)\n$/);
  });
});

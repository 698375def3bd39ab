import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { dump } from '../support/ops.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';

/** `csr backup` while the server writes, `csr restore` refused while it runs, then restored and compared (issue 24 item 6). */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-backup-'));
const elsewhere = mkdtempSync(join(tmpdir(), 'csr-backup-file-'));
const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

/** Until the records projection has applied the whole restored log. */
async function caughtUp(csr: ReturnType<typeof csrTool>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { projections } = await csr.json<{ projections: { name: string; lagEvents: number }[] }>('projections', 'status');
    const records = projections.find((row) => row.name === 'records');
    if (records?.lagEvents === 0) return;
    if (Date.now() > deadline) throw new Error(`the restored server did not catch up: ${JSON.stringify(records)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('backup and restore', () => {
  it('backs up a consistent store while writes go on, refuses to restore under a running server, and restores it', async () => {
    const csr = csrTool(dataDir, ENV);
    const { slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'backed-up');
    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'load');
    server = await spawnServer({ DATA_DIR: dataDir, ...ENV });
    const api = client(server.url, key);
    await csr.json('webhooks', 'create', '--workspace', slug, '--name', 'hook', '--url', 'https://127.0.0.1:9/hook');
    const hooksBefore = await csr.json('webhooks', 'list', '--workspace', slug);

    const acknowledged: { id: string; name: string }[] = [];
    let stop = false;
    const writer = async (worker: number) => {
      for (let i = 0; !stop; i++) {
        const name = `backed ${worker}-${i}`;
        const response = await api.post('/api/v1/clients', { name });
        expect(response.status).toBe(201);
        acknowledged.push({ id: response.body.ids[0], name });
      }
    };
    const writers = [writer(1), writer(2), writer(3)];
    while (acknowledged.length < 150) await new Promise((resolve) => setTimeout(resolve, 5));
    const beforeBackup = [...acknowledged];
    const file = join(elsewhere, 'store.tar');
    const made = await csr.json<{ file: string; files: { name: string }[] }>('backup', file);
    const duringBackup = acknowledged.length;
    stop = true;
    await Promise.all(writers);
    expect(made.file).toBe(file);
    expect(made.files.map((f) => f.name)).toEqual(expect.arrayContaining(['read.db', 'events.db', 'setup.db', 'webhooks.db']));
    expect(made.files[0]!.name).toBe('read.db');
    expect(execFileSync('tar', ['tf', file], { encoding: 'utf8' }).trim().split('\n')).toEqual(['csr-backup.json', ...made.files.map((f) => f.name)]);
    expect(duringBackup).toBeGreaterThan(beforeBackup.length);

    const refused = await csr.fails(1, 'restore', file);
    expect(refused).toMatch(/^csr: a server is running on .+ \(pid \d+\): stop it first, then restore\n$/);

    await server.kill('SIGTERM');
    server = undefined;
    const restored = await csr.json<{ files: string[] }>('restore', file);
    expect(restored.files).toEqual(expect.arrayContaining(['events.db', 'read.db']));

    server = await spawnServer({ DATA_DIR: dataDir, ...ENV });
    const after = client(server.url, key);
    // The backup copies read.db before events.db, so the restored log holds the writes made
    // between the two copies, which the started server's projector catches up in the background.
    await caughtUp(csr);
    const records = await dump(after);
    const names = new Map((records['clients'] as { id: string; name: string }[]).map((record) => [record.id, record.name]));
    for (const { id, name } of beforeBackup) expect(names.get(id)).toBe(name);
    expect(names.size).toBeLessThanOrEqual(acknowledged.length);
    expect(await csr.json('webhooks', 'list', '--workspace', slug)).toEqual(hooksBefore);
    // The restored read model is the one its log builds.
    const rebuild = await csr.run('projections', 'rebuild', 'records');
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(await dump(after)).toEqual(records);
  }, 120_000);

  it('says what is wrong with a file that is not a backup', async () => {
    const csr = csrTool(mkdtempSync(join(elsewhere, 'empty-')));
    expect(await csr.fails(1, 'restore', join(elsewhere, 'missing.tar'))).toBe(`csr: no backup file at ${join(elsewhere, 'missing.tar')}\n`);
    expect(await csr.fails(2, 'backup')).toContain('missing <file>');
  });

  it('refuses a folder as the backup file in one line, and leaves nothing behind', async () => {
    const store = mkdtempSync(join(elsewhere, 'store-'));
    const csr = csrTool(store);
    await csr.json('workspaces', 'create', 'folder-target');
    const folder = mkdtempSync(join(elsewhere, 'a-folder-'));
    expect(await csr.fails(1, 'backup', folder)).toBe(`csr: ${folder} is a folder: give the backup a file name, e.g. ${join(folder, 'csr-backup.tar')}\n`);
    expect(readdirSync(elsewhere).filter((name) => name.includes('partial') || name.includes('.parts'))).toEqual([]);

    // Without --json: one line for the archive, one per store file with its size.
    const file = join(folder, 'csr-backup.tar');
    const text = await csr.run('backup', file);
    expect(text.code).toBe(0);
    const [head, ...files] = text.stdout.trimEnd().split('\n');
    expect(head).toMatch(new RegExp(`^${file}: ${files.length} store files, [\\d.]+ KiB \\(\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)$`));
    expect(files[0]).toMatch(/^ {2}read\.db +[\d.]+ KiB$/);
    expect(files.map((line) => line.trim().split(/ +/)[0])).toEqual(expect.arrayContaining(['read.db', 'events.db', 'setup.db', 'webhooks.db']));
  });
});

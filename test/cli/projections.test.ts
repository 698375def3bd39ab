import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { createKey, dump, loadWhile, seed } from '../support/ops.js';
import { repoRoot, spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';
import { RECEIVER_CA_FILE, startReceiver } from '../support/receiver.js';
import { RECORDS_VERSION } from '../../projections/recordProjection.js';
import { Sqlite } from '../../src/sqlite/driver.js';

/** `csr projections status|rebuild` against a real server process and store (issue 24, items 1 and 2). */

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.kill();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'csr-projections-'));
  dirs.push(dir);
  return dir;
}

async function server(dir: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const started = await spawnServer({ DATA_DIR: dir, ...env });
  servers.push(started);
  return started;
}

/** A rebuild that must succeed: its result document (progress lines go to stderr). */
async function rebuilt(csr: ReturnType<typeof csrTool>, ...args: string[]): Promise<any> {
  const run = await csr.run('projections', 'rebuild', ...args, '--json');
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

type Row = { name: string; kind: string; state: string; generation: number; version: number; checkpoint: string | null; head: string; lagEvents: number; lagMs: number; eventsPerSecond: number; lastError: string | null };

/** The status row of `name` once `done` holds for it (the runners save their status every few seconds). */
async function rowWhen(csr: ReturnType<typeof csrTool>, name: string, done: (row: Row) => boolean): Promise<Row> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const row = (await csr.json<{ projections: Row[] }>('projections', 'status')).projections.find((r) => r.name === name)!;
    if ((row && done(row)) || Date.now() > deadline) return row;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('csr projections status', () => {
  it('shows a live projection, then one lagging behind writes no projector has applied, then live again', async () => {
    const dir = dataDir();
    const key = await createKey(dir);
    const csr = csrTool(dir);
    let running = await server(dir);
    await seed(client(running.url, key), 20);
    const live = await csr.json<{ head: string; projections: Row[] }>('projections', 'status');
    const records = live.projections.find((row) => row.name === 'records')!;
    expect(records).toMatchObject({ state: 'live', generation: 1, version: RECORDS_VERSION.current, lagEvents: 0, lagMs: 0, lastError: null, head: live.head });
    expect(records.checkpoint! <= live.head).toBe(true);
    // The reactors (projections that append) are listed with the same fields.
    for (const reactor of ['rollups', 'automation', 'health score']) {
      expect(live.projections.find((row) => row.name === reactor)).toMatchObject({ name: reactor, version: 1, lastError: null });
    }
    // The webhook fan-out's consumer group is listed too, with its checkpoint and lag.
    const fanOut = await rowWhen(csr, 'webhooks', (row) => row.lagEvents === 0 && row.eventsPerSecond > 0);
    expect(fanOut).toMatchObject({ kind: 'fan-out', version: null, generation: null, state: 'live', lagEvents: 0, lagMs: 0, lastError: null, head: live.head });
    expect(fanOut.checkpoint).not.toBeNull();
    expect(fanOut.eventsPerSecond).toBeGreaterThan(0);
    await running.kill('SIGTERM');

    // An API without a projector: the write is in the log, its answer a 503 after the visibility wait.
    running = await server(dir, { ROLES: 'api' });
    const lagging = await client(running.url, key).post('/api/v1/clients', Array.from({ length: 30 }, (_, i) => ({ name: `late ${i}` })));
    expect(lagging.status).toBe(503);
    const behind = (await csr.json<{ projections: Row[] }>('projections', 'status')).projections.find((row) => row.name === 'records')!;
    expect(behind).toMatchObject({ state: 'catching-up', lagEvents: 30, checkpoint: records.checkpoint });
    expect(behind.lagMs).toBeGreaterThan(5_000);
    // No dispatcher either: the fan-out waits at its checkpoint, 30 record events behind.
    const fanOutBehind = (await csr.json<{ projections: Row[] }>('projections', 'status')).projections.find((row) => row.name === 'webhooks')!;
    expect(fanOutBehind).toMatchObject({ kind: 'fan-out', state: 'catching-up', lagEvents: 30, checkpoint: fanOut.checkpoint });
    const table = await csr.run('projections', 'status');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^NAME\s+VERSION\s+GEN\s+STATE/);
    expect(table.stdout).toMatch(new RegExp(`records\\s+${RECORDS_VERSION.current}\\s+1\\s+catching-up`));
    expect(table.stdout).toMatch(/webhooks\s+-\s+-\s+catching-up/);
    await running.kill('SIGTERM');

    running = await server(dir);
    expect(await rowWhen(csr, 'records', (row) => row.lagEvents === 0)).toMatchObject({ state: 'live', lagEvents: 0 });
    expect(await rowWhen(csr, 'webhooks', (row) => row.lagEvents === 0)).toMatchObject({ state: 'live', lagEvents: 0 });
  }, 240_000);
});

describe('csr projections rebuild', () => {
  it('rebuilds under a write and read load with zero failed requests, read-your-writes, and the same read model', async () => {
    const dir = dataDir();
    const key = await createKey(dir);
    const env = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE };
    const running = await server(dir, env);
    const api = client(running.url, key);
    await seed(api, 600);
    const csr = csrTool(dir, env);
    // Webhook dispatch goes on undisturbed: every client created under the load is delivered.
    const receiver = await startReceiver();
    const [workspace] = await csr.json<{ slug: string }[]>('workspaces', 'list');
    await csr.json('webhooks', 'create', '--workspace', workspace!.slug, '--name', 'Ops', '--url', `${receiver.origin}/ops`, '--events', 'created', '--objects', 'clients');
    const { result: rebuild, seen } = await loadWhile(api, { path: '/api/v1/billing?limit=50', atLeast: 590 }, () => csr.run('projections', 'rebuild', 'records', '--json'));
    const { failures, requests, createdIds } = seen;
    expect(rebuild.code, rebuild.stderr).toBe(0);
    const result = JSON.parse(rebuild.stdout);
    expect(result).toMatchObject({ projection: 'records', version: RECORDS_VERSION.current, generation: 2, resumed: false });
    expect(result.events).toBeGreaterThan(2_000);
    // One progress document per line on stderr.
    for (const line of rebuild.stderr.trim().split('\n')) expect(JSON.parse(line)).toMatchObject({ projection: 'records', generation: 2 });
    expect(rebuild.stderr).toContain('"phase":"done"');
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(20);
    const delivered = (requests: { body: { data?: { id?: string } } }[]) => new Set(requests.map((request) => request.body?.data?.id));
    const received = await receiver.waitFor('/ops', (requests) => createdIds.every((id) => delivered(requests).has(id)), 30_000).finally(() => receiver.close());
    expect(createdIds.length).toBeGreaterThan(0);
    expect(createdIds.filter((id) => !delivered(received).has(id))).toEqual([]);

    const status = await csr.json<{ projections: Row[] }>('projections', 'status');
    expect(status.projections.filter((row) => row.name === 'records')).toMatchObject([{ generation: 2, state: 'live' }]);

    // Record for record: what the rebuilt generation (that also followed the load) answers is what
    // a second rebuild from the log alone answers.
    const after = await dump(api);
    expect(after['clients']!.length).toBeGreaterThan(600);
    const again = await rebuilt(csr, '--all');
    expect(again).toMatchObject([{ projection: 'records', generation: 3 }]);
    expect(await dump(api)).toEqual(after);
  }, 120_000);

  it('kill -9 of the CLI mid-rebuild leaves the live generation serving; rebuild again resumes, --restart starts over', async () => {
    const dir = dataDir();
    const key = await createKey(dir);
    const running = await server(dir);
    const api = client(running.url, key);
    await seed(api, 3_000);
    const before = await dump(api);

    const child = spawn(process.execPath, [join(repoRoot, 'bin', 'csr'), 'projections', 'rebuild', 'records', '--json'], {
      cwd: repoRoot,
      env: { ...process.env, DATA_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Killed as soon as the new generation's checkpoint has moved (its first batch is in), many
    // batches before its last, however fast the machine builds. (Its first progress line, which
    // this waited for, comes a second after the process started: on a machine a few times faster
    // than this one that was the line of a finished rebuild.)
    const read = new Sqlite(join(dir, 'read.db'), { readonly: true });
    try {
      const building = read.prepare('SELECT building, building_position AS position FROM read_model WHERE id = 1');
      for (const deadline = Date.now() + 60_000; ; ) {
        const row = building.get() as { building: number | null; position: string | null } | undefined;
        if (row?.building === 2 && row.position !== null) break;
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the rebuild's first batch was not seen: ${JSON.stringify(row)}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      child.kill('SIGKILL');
    } finally {
      read.close();
    }
    await exited;

    const csr = csrTool(dir);
    const status = await csr.json<{ projections: Row[] }>('projections', 'status');
    const [live, building] = status.projections;
    expect(live).toMatchObject({ name: 'records', generation: 1, state: 'live' });
    expect(building).toMatchObject({ name: 'records', generation: 2, state: 'rebuilding' });
    expect(building!.lagEvents).toBeGreaterThan(0);
    expect(await dump(api)).toEqual(before);

    const resumed = await rebuilt(csr, 'records');
    expect(resumed).toMatchObject({ resumed: true, generation: 2 });
    expect(await dump(api)).toEqual(before);

    const restarted = await rebuilt(csr, 'records', '--restart');
    expect(restarted).toMatchObject({ resumed: false, generation: 3 });
    expect(await dump(api)).toEqual(before);
    // The resumed run applied only what its checkpoint had left; one started over, the whole log.
    expect(resumed.events).toBeLessThan(restarted.events);
  }, 180_000);

  it('names what is wrong with the arguments', async () => {
    const csr = csrTool(dataDir());
    expect(await csr.fails(2, 'projections', 'rebuild')).toContain('name one projection, or give --all');
    expect(await csr.fails(2, 'projections', 'rebuild', 'nope')).toContain('no projection "nope" (there are: records)');
  });
});

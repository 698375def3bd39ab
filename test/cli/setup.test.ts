import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationFailed } from '../../src/core/errors.js';
import type { EventStore, NewEvent } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite/index.js';
import { fingerprint } from '../../src/setup/apiKeys.js';
import type { SetupStore } from '../../src/setup/port.js';
import { workspaceStream } from '../../src/events/workspace.js';
import { SetupService } from '../../src/setup/service.js';
import { openSqliteSetupStore } from '../../src/setup/sqlite/index.js';
import { csrTool } from '../support/cli.js';
import { repoRoot } from '../support/process.js';

/** The `csr` tool on a temporary DATA_DIR, exactly as an operator runs it. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const KEY = /^csr_[A-Za-z0-9_-]{43}$/;

const dataDir = mkdtempSync(join(tmpdir(), 'csr-cli-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const { run: csr, json, fails } = csrTool(dataDir);

const slug = () => `acme-${randomUUID().slice(0, 8)}`;

async function withStores<T>(work: (stores: { events: EventStore; setup: SetupStore }) => Promise<T>): Promise<T> {
  const events = openSqliteEventStore({ path: join(dataDir, 'events.db') });
  const setup = openSqliteSetupStore({ path: join(dataDir, 'setup.db') });
  try {
    return await work({ events, setup });
  } finally {
    await events.close();
    await setup.close();
  }
}

beforeAll(() => {
  if (!existsSync(join(repoRoot, 'dist', 'src', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` (npm test builds first)');
  }
});

describe('csr workspaces', () => {
  it('create --json prints { id, slug, name }', async () => {
    const name = slug();
    const workspace = await json('workspaces', 'create', name, '--name', 'Acme Inc');
    expect(Object.keys(workspace).sort()).toEqual(['id', 'name', 'slug']);
    expect(workspace).toEqual({ id: expect.stringMatching(UUID), slug: name, name: 'Acme Inc' });
  });

  it('the name defaults to the slug; --json may also come first', async () => {
    const name = slug();
    expect(await json('workspaces', 'create', name)).toMatchObject({ slug: name, name });
    const other = slug();
    const run = await csr('--json', 'workspaces', 'create', other);
    expect(JSON.parse(run.stdout)).toMatchObject({ slug: other });
  });

  it('refuses a taken slug and a malformed one (exit 1)', async () => {
    const name = slug();
    await json('workspaces', 'create', name);
    expect(await fails(1, 'workspaces', 'create', name, '--json')).toContain(`"${name}" is already taken`);
    expect(await fails(1, 'workspaces', 'create', 'Acme Inc', '--json')).toContain('lowercase letters, digits and dashes');
    expect(await fails(1, 'workspaces', 'create', 'a'.repeat(64))).toContain('1 to 63');
    expect(await fails(1, 'workspaces', 'create', slug(), '--name', '  ')).toContain('the workspace name must not be empty');
  });

  it('prints a readable text form without --json', async () => {
    const name = slug();
    const run = await csr('workspaces', 'create', name, '--name', 'Acme Inc');
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(new RegExp(`^id: +[0-9a-f-]{36}\\nslug: +${name}\\nname: +Acme Inc\\n$`));
  });
});

describe('csr keys', () => {
  it('create --json prints { id, name, key, access, objects } with a csr_ key, read-write on all objects by default', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    const created = await json('keys', 'create', '--workspace', ws, '--name', 'Zapier');
    expect(Object.keys(created).sort()).toEqual(['access', 'id', 'key', 'name', 'objects', 'rateLimit']);
    expect(created).toEqual({ id: expect.stringMatching(UUID), name: 'Zapier', key: expect.stringMatching(KEY), access: 'read-write', objects: 'all', rateLimit: 'default' });
  });

  it('--read-only and --objects limit the key; the stored fingerprint is the SHA-256 of the printed key', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    const created = await json<{ id: string; key: string }>(
      'keys', 'create', '--workspace', ws, '--name', 'Reporting', '--read-only', '--objects', 'clients, contacts,clients',
    );
    expect(created).toMatchObject({ access: 'read-only', objects: ['clients', 'contacts'] });
    const stored = await withStores(({ setup }) => setup.keyByFingerprint(fingerprint(created.key)));
    expect(stored).toMatchObject({ id: created.id, access: 'read-only', objects: ['clients', 'contacts'], revokedAt: null });
  });

  it('list --json shows every key of the workspace, never a key value or fingerprint', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    expect(await json('keys', 'list', '--workspace', ws)).toEqual([]);
    const first = await json<{ id: string; key: string }>('keys', 'create', '--workspace', ws, '--name', 'First');
    const second = await json<{ id: string; key: string }>('keys', 'create', '--workspace', ws, '--name', 'Second', '--objects', 'tasks');
    const other = slug();
    await json('workspaces', 'create', other);
    await json('keys', 'create', '--workspace', other, '--name', 'Elsewhere');

    const run = await csr('keys', 'list', '--workspace', ws, '--json');
    expect(run.code).toBe(0);
    const listed = JSON.parse(run.stdout) as Record<string, unknown>[];
    expect(listed).toEqual([
      { id: first.id, name: 'First', access: 'read-write', objects: 'all', rateLimit: 'default', refused: 0, refusedAt: null, createdAt: expect.stringMatching(ISO), lastUsedAt: null, revokedAt: null },
      { id: second.id, name: 'Second', access: 'read-write', objects: ['tasks'], rateLimit: 'default', refused: 0, refusedAt: null, createdAt: expect.stringMatching(ISO), lastUsedAt: null, revokedAt: null },
    ]);
    for (const secret of [first.key, second.key, fingerprint(first.key), fingerprint(second.key)]) {
      expect(run.stdout).not.toContain(secret);
    }
    const text = await csr('keys', 'list', '--workspace', ws);
    expect(text.stdout).toContain('name:       First');
    expect(text.stdout).not.toContain(first.key);
    expect(text.stdout).not.toContain(fingerprint(first.key));
  });

  it('list shows when a key was last used', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    const created = await json<{ id: string }>('keys', 'create', '--workspace', ws, '--name', 'Used');
    await withStores(({ setup }) => setup.touchKey(created.id, '2030-01-02T03:04:05.006Z'));
    expect(await json('keys', 'list', '--workspace', ws)).toEqual([expect.objectContaining({ id: created.id, lastUsedAt: '2030-01-02T03:04:05.006Z' })]);
  });

  it('revoke prints { id, revokedAt }; revoking again keeps the first time', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    const created = await json<{ id: string }>('keys', 'create', '--workspace', ws, '--name', 'Old');
    const revoked = await json<{ revokedAt: string }>('keys', 'revoke', created.id);
    expect(revoked).toEqual({ id: created.id, revokedAt: expect.stringMatching(ISO) });
    expect(await json('keys', 'revoke', created.id)).toEqual(revoked);
    expect(await json('keys', 'list', '--workspace', ws)).toEqual([expect.objectContaining({ id: created.id, revokedAt: revoked.revokedAt })]);
  });

  it('create text output shows the key once with a warning', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    const run = await csr('keys', 'create', '--workspace', ws, '--name', 'Text');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^key: +csr_[A-Za-z0-9_-]{43}$/m);
    expect(run.stdout).toContain('shown this once');
    expect(() => JSON.parse(run.stdout)).toThrow();
  });

  it('fails on an unknown workspace, an unknown object and an unknown key id (exit 1)', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    expect(await fails(1, 'keys', 'create', '--workspace', 'no-such-ws', '--name', 'X', '--json')).toContain('workspace "no-such-ws" not found');
    expect(await fails(1, 'keys', 'list', '--workspace', 'no-such-ws', '--json')).toContain('not found');
    const unknown = await fails(1, 'keys', 'create', '--workspace', ws, '--name', 'X', '--objects', 'clients,spaceships', '--json');
    expect(unknown).toContain('"spaceships"');
    expect(unknown).toContain('clients, contacts');
    expect(await fails(1, 'keys', 'create', '--workspace', ws, '--name', 'X', '--objects', ',', '--json')).toContain('at least one object');
    expect(await fails(1, 'keys', 'revoke', randomUUID(), '--json')).toContain('not found');
    expect(await json('keys', 'list', '--workspace', ws)).toEqual([]);
  });
});

describe('csr users', () => {
  it('add --json prints { id, name, email }', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    const user = await json('users', 'add', '--workspace', ws, '--name', 'Ana Lima', '--email', 'ana@x.test');
    expect(Object.keys(user).sort()).toEqual(['email', 'id', 'name']);
    expect(user).toEqual({ id: expect.stringMatching(UUID), name: 'Ana Lima', email: 'ana@x.test' });
  });

  it('refuses a bad email, an email already used (any case) and an unknown workspace (exit 1)', async () => {
    const ws = slug();
    await json('workspaces', 'create', ws);
    await json('users', 'add', '--workspace', ws, '--name', 'Ana Lima', '--email', 'ana@x.test');
    expect(await fails(1, 'users', 'add', '--workspace', ws, '--name', 'Ana', '--email', 'not-an-email', '--json')).toContain('email');
    expect(await fails(1, 'users', 'add', '--workspace', ws, '--name', 'Ana', '--email', 'ANA@X.test', '--json')).toContain('already exists');
    expect(await fails(1, 'users', 'add', '--workspace', 'no-such-ws', '--name', 'Ana', '--email', 'a@x.test')).toContain('not found');
    expect(await fails(1, 'users', 'add', '--workspace', ws, '--name', '', '--email', 'bo@x.test')).toContain('must not be empty');
  });
});

describe('csr help and version (exit 0, on stdout)', () => {
  it.each([
    ['no arguments', [], 'Usage: csr <resource> <command>'],
    ['--help', ['--help'], 'Usage: csr <resource> <command>'],
    ['-h', ['-h'], 'Usage: csr <resource> <command>'],
    ['help', ['help'], 'Usage: csr <resource> <command>'],
    ['resource help', ['keys', '--help'], 'csr keys revoke <keyId>'],
    ['help <resource>', ['help', 'keys'], 'csr keys revoke <keyId>'],
    ['command help', ['keys', 'create', '--help'], 'csr keys create --workspace <slug> --name <text>'],
    ['help <resource> <command>', ['help', 'keys', 'create'], 'csr keys create --workspace <slug> --name <text>'],
  ])('%s', async (_, args, shown) => {
    const result = await csr(...args);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toContain(shown);
  });

  it('--version prints the version', async () => {
    const result = await csr('--version');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^csr \d+\.\d+\.\d+\n$/);
  });
});

describe('csr usage errors (exit 2, one line on stderr saying what to do, nothing on stdout)', () => {
  /** The commands, in the order `csr --help` lists them. */
  const COMMANDS = 'workspaces, keys, users, webhooks, records, numbers, objects, fields, openapi, history, get, audit, projections, backup, restore, playbooks, automation, import, setup, privacy';

  it.each([
    ['unknown command', ['spaceships', 'launch'], `csr: unknown command "spaceships". Commands: ${COMMANDS} (see csr --help)`],
    ['a mistyped command', ['webhoks', 'list'], `csr: unknown command "webhoks". Did you mean "webhooks"? Commands: ${COMMANDS} (see csr --help)`],
    ['a mistyped subcommand', ['keys', 'lst'], 'csr: unknown command "keys lst". Did you mean "keys list"? keys commands: create, list, revoke, update, rename (see csr help keys)'],
    ['unknown subcommand', ['keys', 'rotate'], 'csr: unknown command "keys rotate". keys commands: create, list, revoke, update, rename (see csr help keys)'],
    ['missing command', ['keys', '--json'], 'csr: missing keys command before --json (see csr help keys)'],
    ['missing slug', ['workspaces', 'create', '--json'], 'csr: missing <slug>: csr workspaces create <slug> [--name "Acme Inc"] (see csr help workspaces create)'],
    ['extra argument', ['workspaces', 'create', 'a', 'b'], 'csr: unexpected argument "b": csr workspaces create <slug> [--name "Acme Inc"] (see csr help workspaces create)'],
    [
      'missing --name',
      ['keys', 'create', '--workspace', 'acme', '--json'],
      'csr: missing option --name: csr keys create --workspace <slug> --name <text> [--read-only] [--objects a,b] [--rate 20/s[,burst=40]] (see csr help keys create)',
    ],
    ['missing option value', ['keys', 'create', '--workspace', 'acme', '--name'], 'csr: option --name needs a value (see csr help keys create)'],
    ['missing key id', ['keys', 'revoke'], 'csr: missing <keyId>: csr keys revoke <keyId> (see csr help keys revoke)'],
    ['a mistyped option', ['keys', 'create', '--workspace', 'acme', '--nmae', 'x'], 'csr: unknown option --nmae. Did you mean "--name"? (see csr help keys create)'],
    ['unknown option', ['keys', 'list', '--workspace', 'acme', '--colour'], 'csr: unknown option --colour (see csr help keys list)'],
    ['unknown leading option', ['--verbose', 'keys', 'list'], 'csr: unknown option --verbose. Options of a command come after it (see csr --help)'],
  ])('%s', async (_, args, message) => {
    expect(await fails(2, ...args)).toBe(`${message}\n`);
  });

  it('a usage error of a command without subcommands points at its help', async () => {
    const stderr = await fails(2, 'import', 'clients', '/nonexistent/x.csv', '--workspace', 'zzz');
    expect(stderr.split('\n').at(-2)).toBe('csr: cannot read the file "/nonexistent/x.csv" (see csr help import)');
  });
});

describe('audit events', () => {
  it('every change is an event on workspace-<id>, by the cli operator, without key values or fingerprints', async () => {
    const ws = slug();
    const workspace = await json<{ id: string }>('workspaces', 'create', ws, '--name', 'Audited');
    const key = await json<{ id: string; key: string }>('keys', 'create', '--workspace', ws, '--name', 'Zapier', '--read-only', '--objects', 'clients');
    await json('keys', 'revoke', key.id);
    await json('keys', 'revoke', key.id);
    const user = await json<{ id: string }>('users', 'add', '--workspace', ws, '--name', 'Ana Lima', '--email', 'ana@x.test');
    // Failed commands log nothing.
    await fails(1, 'users', 'add', '--workspace', ws, '--name', 'Ana Lima', '--email', 'ANA@x.test');
    await fails(1, 'keys', 'create', '--workspace', ws, '--name', 'X', '--objects', 'nope');

    const events = await withStores(({ events }) => events.readStream(workspaceStream(workspace.id)));
    expect(events.map((event) => event.type)).toEqual(['WorkspaceCreated', 'ApiKeyCreated', 'ApiKeyRevoked', 'UserAdded']);
    expect(events.map((event) => event.data)).toEqual([
      { schemaVersion: 1, workspaceId: workspace.id, slug: ws, name: 'Audited' },
      { schemaVersion: 1, workspaceId: workspace.id, id: key.id, name: 'Zapier', access: 'read-only', objects: ['clients'] },
      { schemaVersion: 1, workspaceId: workspace.id, id: key.id, name: 'Zapier', revokedAt: expect.stringMatching(ISO) },
      { schemaVersion: 1, workspaceId: workspace.id, id: user.id, name: 'Ana Lima', email: 'ana@x.test' },
    ]);
    const actionIds = new Set<string>();
    for (const event of events) {
      const { metadata } = event;
      expect(metadata).toEqual({
        source: 'app',
        actor: { type: 'user', id: userInfo().username, name: userInfo().username },
        actionId: expect.stringMatching(UUID),
        correlationId: metadata.actionId,
        causationId: metadata.actionId,
        hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(event.id).toMatch(UUID);
      actionIds.add(metadata.actionId);
    }
    expect(actionIds.size).toBe(4);
    const logged = JSON.stringify(events);
    expect(logged).not.toContain(key.key);
    expect(logged).not.toContain(fingerprint(key.key));
  });
});

describe('SetupService', () => {
  const dir = mkdtempSync(join(tmpdir(), 'csr-service-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** An event log that fails every append: the change must say it was saved without its audit event. */
  function failingLog(events: EventStore): EventStore {
    return Object.assign(Object.create(events) as EventStore, {
      append: async (_stream: string, _events: NewEvent[]) => {
        throw new Error('disk full');
      },
    });
  }

  it('uses the clock, the actor and the known objects it is given, and trims names', async () => {
    const events = openSqliteEventStore({ path: join(dir, 'events.db') });
    const setup = openSqliteSetupStore({ path: join(dir, 'setup.db') });
    try {
      const service = new SetupService({
        setup,
        events,
        clock: () => new Date('2030-05-06T07:08:09.010Z'),
        actor: { type: 'system', id: 'setup-page', name: 'Setup' },
        knownObjects: () => ['clients', 'spaceships'],
      });
      const workspace = await service.createWorkspace('space', '  Space Inc ');
      expect(workspace).toEqual({ id: expect.stringMatching(UUID), slug: 'space', name: 'Space Inc', createdAt: '2030-05-06T07:08:09.010Z' });
      const { apiKey, key } = await service.createKey('space', { name: ' Launcher ', objects: ['spaceships'] });
      expect(apiKey).toMatchObject({ name: 'Launcher', objects: ['spaceships'], createdAt: '2030-05-06T07:08:09.010Z', fingerprint: fingerprint(key) });
      await expect(service.createKey('space', { name: 'X', objects: ['contacts'] })).rejects.toBeInstanceOf(ValidationFailed);
      const revoked = await service.revokeKey(apiKey.id);
      expect(revoked.revokedAt).toBe('2030-05-06T07:08:09.010Z');
      const logged = await events.readStream(workspaceStream(workspace.id));
      expect(logged.map((event) => event.metadata.actor)).toEqual(Array(3).fill({ type: 'system', id: 'setup-page', name: 'Setup' }));
    } finally {
      await events.close();
      await setup.close();
    }
  });

  it('says so when a change was saved but its audit event could not be written', async () => {
    const events = openSqliteEventStore({ path: join(dir, 'events-failing.db') });
    const setup = openSqliteSetupStore({ path: join(dir, 'setup-failing.db') });
    try {
      const service = new SetupService({ setup, events: failingLog(events) });
      await expect(service.createWorkspace('saved')).rejects.toThrow(/saved, but its audit event \(WorkspaceCreated\).*disk full/);
      expect(await setup.workspaceBySlug('saved')).toMatchObject({ slug: 'saved' });
    } finally {
      await events.close();
      await setup.close();
    }
  });
});

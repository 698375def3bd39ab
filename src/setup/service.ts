import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import * as v from 'valibot';
import { NotFound } from '../core/errors.js';
import type { Actor, EventStore } from '../eventstore/port.js';
import { loadCatalogue } from './catalogues.js';
import { fingerprint, generateApiKey } from './apiKeys.js';
import { appendAuditEvent, type SetupEventType } from './audit.js';
import { checkObjectKeys, ObjectsInput, parse, text } from './input.js';
import type { ApiKey, KeyAccess, SetupStore, User, Workspace } from './port.js';

/**
 * Setup use cases (workspaces, API keys, users) for the `csr` tool and, later, the Setup page.
 * Input is validated here; the store enforces uniqueness. Every change is also appended to the
 * event log as an audit event on `workspace-<workspaceId>` (who, when, what; never a key value
 * or fingerprint).
 *
 * Order: the setup store first, then the audit event. The store is what decides (a taken slug or
 * email fails there, and then nothing is logged); should the append fail after it, the error
 * says that the change was saved without its audit event.
 */

export interface SetupServiceOptions {
  setup: SetupStore;
  events: EventStore;
  clock?: () => Date;
  /** Object keys a key may be limited to; the workspace's objects in the schema catalogue by default. */
  knownObjects?: (workspaceId: string) => Iterable<string> | Promise<Iterable<string>>;
  /** Who makes the changes (audit metadata); the operator running `csr` by default. */
  actor?: Actor;
}

export interface NewKeyInput {
  name: string;
  readOnly?: boolean;
  /** 'all' (the default) or the object keys the key may access. */
  objects?: 'all' | string[];
}

export interface CreatedKey {
  apiKey: ApiKey;
  /** The key value: shown this once, never stored. */
  key: string;
}

export interface NewUserInput {
  name: string;
  email: string;
}

/** The operator running the tool: a user, named by their OS user name (history says "via app"). */
export function cliActor(): Actor {
  let id = 'unknown';
  try {
    id = userInfo().username || id;
  } catch {
    // No passwd entry for this uid (some containers): the audit still says it came from csr.
  }
  return { type: 'user', id, name: id };
}

const Slug = v.pipe(
  v.string('the workspace slug must be text'),
  v.regex(
    /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
    'the workspace slug must be 1 to 63 lowercase letters, digits and dashes, starting and ending with a letter or digit',
  ),
);

const KeyInput = v.object({
  name: text('the key name', 200),
  readOnly: v.optional(v.boolean('readOnly must be true or false'), false),
  objects: ObjectsInput,
});

const KeyName = v.object({ name: text('the key name', 200) });

const UserInput = v.object({
  name: text('the user name', 200),
  email: v.pipe(
    v.string('the email must be text'),
    v.trim(),
    v.email('the email must be an email address like ana@example.com'),
    v.maxLength(254, 'the email must be at most 254 characters'),
  ),
});

export class SetupService {
  private readonly setup: SetupStore;
  private readonly events: EventStore;
  private readonly clock: () => Date;
  private readonly knownObjects: (workspaceId: string) => Iterable<string> | Promise<Iterable<string>>;
  private readonly actor: Actor;

  constructor(options: SetupServiceOptions) {
    this.setup = options.setup;
    this.events = options.events;
    this.clock = options.clock ?? (() => new Date());
    this.knownObjects =
      options.knownObjects ?? (async (workspaceId) => (await loadCatalogue(this.events, workspaceId)).objects.map((object) => object.key));
    this.actor = options.actor ?? cliActor();
  }

  async createWorkspace(slug: string, name?: string): Promise<Workspace> {
    const workspace: Workspace = {
      id: randomUUID(),
      slug: parse(Slug, slug),
      name: name === undefined ? slug : parse(text('the workspace name', 200), name),
      createdAt: this.now(),
    };
    await this.setup.createWorkspace(workspace);
    await this.audit(workspace.id, 'WorkspaceCreated', { slug: workspace.slug, name: workspace.name });
    return workspace;
  }

  async createKey(workspaceSlug: string, input: NewKeyInput): Promise<CreatedKey> {
    const workspace = await this.workspace(workspaceSlug);
    const valid = parse(KeyInput, input);
    const objects = valid.objects === 'all' ? 'all' : await this.checkObjects(workspace.id, valid.objects);
    const access: KeyAccess = valid.readOnly ? 'read-only' : 'read-write';
    const key = generateApiKey();
    const apiKey: ApiKey = {
      id: randomUUID(),
      workspaceId: workspace.id,
      name: valid.name,
      fingerprint: fingerprint(key),
      access,
      objects,
      createdAt: this.now(),
      lastUsedAt: null,
      revokedAt: null,
    };
    await this.setup.createKey(apiKey);
    await this.audit(workspace.id, 'ApiKeyCreated', { id: apiKey.id, name: apiKey.name, access, objects });
    return { apiKey, key };
  }

  async listWorkspaces(): Promise<Workspace[]> {
    return this.setup.listWorkspaces();
  }

  async listUsers(workspaceSlug: string): Promise<User[]> {
    const workspace = await this.workspace(workspaceSlug);
    return this.setup.listUsers(workspace.id);
  }

  /** A new name for a key; the history keeps showing the name each change was made with. */
  async renameKey(keyId: string, name: string): Promise<ApiKey> {
    const found = await this.setup.keyById(keyId);
    if (!found) throw new NotFound(`API key ${keyId} not found`);
    const valid = parse(KeyName, { name });
    if (valid.name === found.name) return found;
    const renamed = await this.setup.renameKey(keyId, valid.name);
    if (!renamed) throw new NotFound(`API key ${keyId} not found`);
    await this.audit(renamed.workspaceId, 'ApiKeyRenamed', { id: renamed.id, name: renamed.name, previousName: found.name });
    return renamed;
  }

  async listKeys(workspaceSlug: string): Promise<ApiKey[]> {
    const workspace = await this.workspace(workspaceSlug);
    return this.setup.listKeys(workspace.id);
  }

  /** Revoking a revoked key changes nothing and answers it with its first revocation time. */
  async revokeKey(keyId: string): Promise<ApiKey> {
    const found = await this.setup.keyById(keyId);
    if (!found) throw new NotFound(`API key ${keyId} not found`);
    if (found.revokedAt !== null) return found;
    const at = this.now();
    const revoked = await this.setup.revokeKey(keyId, at);
    if (!revoked) throw new NotFound(`API key ${keyId} not found`);
    // Another csr run may have revoked it in between: then that run logged it.
    if (revoked.revokedAt === at) {
      await this.audit(revoked.workspaceId, 'ApiKeyRevoked', { id: revoked.id, name: revoked.name, revokedAt: at });
    }
    return revoked;
  }

  async addUser(workspaceSlug: string, input: NewUserInput): Promise<User> {
    const workspace = await this.workspace(workspaceSlug);
    const valid = parse(UserInput, input);
    const user: User = { id: randomUUID(), workspaceId: workspace.id, name: valid.name, email: valid.email, createdAt: this.now() };
    await this.setup.addUser(user);
    await this.audit(workspace.id, 'UserAdded', { id: user.id, name: user.name, email: user.email });
    return user;
  }

  private now(): string {
    return this.clock().toISOString();
  }

  private async workspace(slug: string): Promise<Workspace> {
    const workspace = await this.setup.workspaceBySlug(slug);
    if (!workspace) throw new NotFound(`workspace "${slug}" not found`);
    return workspace;
  }

  private async checkObjects(workspaceId: string, objects: string[]): Promise<string[]> {
    return checkObjectKeys(await this.knownObjects(workspaceId), objects);
  }

  private async audit(workspaceId: string, type: SetupEventType, data: Record<string, unknown>): Promise<void> {
    await appendAuditEvent(this.events, this.actor, workspaceId, type, data);
  }
}

import { MongoServerError, type Collection, type IndexDescription } from 'mongodb';
import { ValidationFailed } from '../../core/errors.js';
import { mongoDatabase, type MongoStoreOptions } from '../../readstore/mongodb/index.js';
import type { ApiKey, SetupStore, User, Workspace } from '../port.js';
import { mappingStorageErrors } from '../../readstore/mongodb/storageFull.js';

/**
 * Setup data on MongoDB: `workspaces` (unique slug), `apiKeys` (unique fingerprint, listed per
 * workspace) and `users` (unique normalised email per workspace). Documents use the entity id as
 * `_id`; uniqueness is enforced by the indexes, so concurrent `csr` runs cannot create duplicates.
 * Works on a standalone server as well as on a replica set (no transactions needed).
 */

interface WorkspaceDoc extends Omit<Workspace, 'id'> {
  _id: string;
}

interface ApiKeyDoc extends Omit<ApiKey, 'id'> {
  _id: string;
}

interface UserDoc extends Omit<User, 'id'> {
  _id: string;
  /** Lower-cased email: "already used in the workspace" is case-insensitive. */
  emailKey: string;
}

export const SETUP_INDEXES: Record<'workspaces' | 'apiKeys' | 'users', IndexDescription[]> = {
  workspaces: [{ name: 'unique_slug', key: { slug: 1 }, unique: true }],
  apiKeys: [
    { name: 'unique_fingerprint', key: { fingerprint: 1 }, unique: true },
    { name: 'by_workspace', key: { workspaceId: 1, createdAt: 1 } },
  ],
  users: [
    { name: 'unique_email', key: { workspaceId: 1, emailKey: 1 }, unique: true },
    { name: 'by_workspace', key: { workspaceId: 1, createdAt: 1 } },
  ],
};

export function emailKey(email: string): string {
  return email.toLowerCase();
}

function isDuplicateOf(error: unknown, field: string): boolean {
  if (!(error instanceof MongoServerError) || error.code !== 11000) return false;
  const pattern = (error as { keyPattern?: Record<string, unknown> }).keyPattern;
  if (pattern) return field in pattern;
  return error.message.includes(field);
}

const workspaceFrom = ({ _id, ...rest }: WorkspaceDoc): Workspace => ({
  id: _id,
  slug: rest.slug,
  name: rest.name,
  createdAt: rest.createdAt,
});

const keyFrom = ({ _id, ...rest }: ApiKeyDoc): ApiKey => ({
  id: _id,
  workspaceId: rest.workspaceId,
  name: rest.name,
  fingerprint: rest.fingerprint,
  access: rest.access,
  objects: rest.objects,
  createdAt: rest.createdAt,
  lastUsedAt: rest.lastUsedAt ?? null,
  revokedAt: rest.revokedAt ?? null,
  ...(rest.rateLimit ? { rateLimit: rest.rateLimit } : {}),
});

const userFrom = ({ _id, ...rest }: UserDoc): User => ({
  id: _id,
  workspaceId: rest.workspaceId,
  name: rest.name,
  email: rest.email,
  createdAt: rest.createdAt,
});

export async function openMongoSetupStore(options: MongoStoreOptions): Promise<SetupStore> {
  const { client, db, owned } = await mongoDatabase(options);
  const workspaces: Collection<WorkspaceDoc> = db.collection<WorkspaceDoc>('workspaces');
  const keys: Collection<ApiKeyDoc> = db.collection<ApiKeyDoc>('apiKeys');
  const users: Collection<UserDoc> = db.collection<UserDoc>('users');
  await Promise.all([
    workspaces.createIndexes(SETUP_INDEXES.workspaces),
    keys.createIndexes(SETUP_INDEXES.apiKeys),
    users.createIndexes(SETUP_INDEXES.users),
  ]);
  let closed = false;

  /** What the embedded store's foreign keys do: keys and users belong to an existing workspace. */
  async function requireWorkspace(workspaceId: string): Promise<void> {
    const found = await workspaces.findOne({ _id: workspaceId }, { projection: { _id: 1 } });
    if (!found) throw new ValidationFailed(`workspace ${workspaceId} does not exist`);
  }

  return mappingStorageErrors({
    async createWorkspace(workspace) {
      try {
        await workspaces.insertOne({ _id: workspace.id, slug: workspace.slug, name: workspace.name, createdAt: workspace.createdAt });
      } catch (error) {
        if (isDuplicateOf(error, 'slug')) throw new ValidationFailed(`workspace slug "${workspace.slug}" is already taken`);
        throw error;
      }
    },

    async listWorkspaces() {
      const found = await workspaces.find({}, { sort: { createdAt: 1, _id: 1 } }).toArray();
      return found.map(workspaceFrom);
    },

    async workspaceBySlug(slug) {
      const found = await workspaces.findOne({ slug });
      return found ? workspaceFrom(found) : null;
    },

    async workspaceById(id) {
      const found = await workspaces.findOne({ _id: id });
      return found ? workspaceFrom(found) : null;
    },

    async createKey(key) {
      await requireWorkspace(key.workspaceId);
      const { id, ...rest } = key;
      try {
        await keys.insertOne({ _id: id, ...rest, objects: Array.isArray(rest.objects) ? [...rest.objects] : rest.objects });
      } catch (error) {
        if (isDuplicateOf(error, 'fingerprint')) throw new ValidationFailed('an API key with this fingerprint already exists');
        throw error;
      }
    },

    async keyByFingerprint(fingerprint) {
      const found = await keys.findOne({ fingerprint });
      return found ? keyFrom(found) : null;
    },

    // The driver only answers asynchronously, and nothing is remembered: a revocation by any
    // node must take effect on the next request.
    keyByFingerprintNow() {
      return undefined;
    },

    async keyById(id) {
      const found = await keys.findOne({ _id: id });
      return found ? keyFrom(found) : null;
    },

    async listKeys(workspaceId) {
      const found = await keys.find({ workspaceId }, { sort: { createdAt: 1, _id: 1 } }).toArray();
      return found.map(keyFrom);
    },

    async revokeKey(id, at) {
      // Only the first revocation sets the time; later ones return the key as it is.
      const revoked = await keys.findOneAndUpdate(
        { _id: id, revokedAt: null },
        { $set: { revokedAt: at } },
        { returnDocument: 'after' },
      );
      if (revoked) return keyFrom(revoked);
      const existing = await keys.findOne({ _id: id });
      return existing ? keyFrom(existing) : null;
    },

    async renameKey(id, name) {
      const renamed = await keys.findOneAndUpdate({ _id: id }, { $set: { name } }, { returnDocument: 'after' });
      return renamed ? keyFrom(renamed) : null;
    },

    async setKeyRateLimit(id, rateLimit) {
      const update = rateLimit === null ? { $unset: { rateLimit: '' as const } } : { $set: { rateLimit } };
      const changed = await keys.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' });
      return changed ? keyFrom(changed) : null;
    },

    async touchKey(id, at) {
      // Only ever moves lastUsedAt forward ($max: null < any text; ISO times order as text).
      await keys.updateOne({ _id: id }, { $max: { lastUsedAt: at } });
    },

    async addUser(user) {
      await requireWorkspace(user.workspaceId);
      try {
        const { id, ...rest } = user;
        await users.insertOne({ _id: id, ...rest, emailKey: emailKey(user.email) });
      } catch (error) {
        if (isDuplicateOf(error, 'emailKey')) {
          throw new ValidationFailed(`email "${user.email}" is already used in this workspace`);
        }
        throw error;
      }
    },

    async listUsers(workspaceId) {
      const found = await users.find({ workspaceId }, { sort: { createdAt: 1, _id: 1 } }).toArray();
      return found.map(userFrom);
    },

    async close() {
      if (closed) return;
      closed = true;
      if (owned) await client.close();
    },
  });
}

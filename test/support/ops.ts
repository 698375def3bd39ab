import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fingerprint, generateApiKey } from '../../src/setup/apiKeys.js';
import { openSqliteSetupStore } from '../../src/setup/sqlite/index.js';
import type { client } from './service.js';

/** Helpers of the operators' tests: a key on a DATA_DIR, a mixed data set, a full dump through the API. */

export async function createKey(dataDir: string): Promise<string> {
  const setup = openSqliteSetupStore({ path: join(dataDir, 'setup.db') });
  const workspaceId = randomUUID();
  await setup.createWorkspace({ id: workspaceId, slug: `ops-${workspaceId.slice(0, 8)}`, name: 'Ops', createdAt: new Date().toISOString() });
  const key = generateApiKey();
  await setup.createKey({
    id: randomUUID(), workspaceId, name: 'ops', fingerprint: fingerprint(key), access: 'read-write', objects: 'all',
    createdAt: new Date().toISOString(), lastUsedAt: null, revokedAt: null,
  });
  await setup.close();
  return key;
}

type Api = ReturnType<typeof client>;

/**
 * Rows posted 50 to a request: each write waits for the read models (and their roll-ups) to show
 * it, up to the server's visibility timeout, and on a loaded machine 400 invoice lines with their
 * invoices' and clients' roll-ups took longer than that (a 503).
 */
async function postAll(api: Api, object: string, rows: Record<string, unknown>[]): Promise<string[]> {
  const ids: string[] = [];
  for (let at = 0; at < rows.length; at += 50) {
    const saved = await api.post(`/api/v1/${object}`, rows.slice(at, at + 50));
    if (saved.status >= 300) throw new Error(`seed ${object}: ${saved.status} ${JSON.stringify(saved.body)}`);
    ids.push(...(saved.body.ids as string[]));
  }
  return ids;
}

/** Clients with invoices and invoice lines (roll-ups), some updated and some deleted: `n` clients. */
export async function seed(api: Api, n: number, tag = 'seed'): Promise<void> {
  for (let start = 0; start < n; start += 200) {
    const count = Math.min(200, n - start);
    const ids = await postAll(api, 'clients', Array.from({ length: count }, (_, i) => ({ name: `${tag} client ${start + i}`, tier: i % 2 ? 'SMB' : 'Enterprise' })));
    const invoices = await postAll(api, 'billing', ids.map((client) => ({ client, status: 'Sent', taxRate: 10 })));
    await postAll(
      api,
      'invoiceLines',
      invoices.flatMap((invoice, i) => [
        { invoice, description: 'seats', quantity: 3, unitPrice: 33.33 },
        { invoice, description: 'support', quantity: 1, unitPrice: i },
      ]),
    );
    for (const id of ids.slice(0, 5)) await api.patch(`/api/v1/clients/${id}`, { tier: 'Mid-Market' });
    await api.delete(`/api/v1/clients/${ids[ids.length - 1]}`);
  }
}

/** Every record of the objects the seed writes, sorted by id, as the API answers them. */
export async function dump(api: Api): Promise<Record<string, unknown[]>> {
  const result: Record<string, unknown[]> = {};
  for (const object of ['clients', 'billing', 'invoiceLines']) {
    const records: any[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await api.get(`/api/v1/${object}?limit=1000&offset=${offset}`);
      if (page.status !== 200) throw new Error(`dump ${object}: ${page.status}`);
      records.push(...page.body.data);
      if (page.body.data.length < 1000) break;
    }
    result[object] = records.sort((a, b) => (a.id < b.id ? -1 : 1));
  }
  return result;
}

/** What a load of `loadWhile` saw: its failed requests (none expected), how many it sent, the clients it created. */
export interface LoadSeen {
  failures: string[];
  requests: number;
  createdIds: string[];
}

/**
 * The load an operation must serve undisturbed (a rebuild): two writers that create a client,
 * change it and read the change back (read-your-writes), and a reader of `list` whose total must
 * stay at least `atLeast`; until `operation` ends.
 */
export async function loadWhile<T>(api: Api, list: { path: string; atLeast: number }, operation: () => Promise<T>): Promise<{ result: T; seen: LoadSeen }> {
  let stop = false;
  const seen: LoadSeen = { failures: [], requests: 0, createdIds: [] };
  const writer = async (worker: number) => {
    for (let i = 0; !stop; i++) {
      const created = await api.post('/api/v1/clients', { name: `load ${worker}-${i}`, tier: 'SMB' });
      seen.requests++;
      if (created.status !== 201) {
        seen.failures.push(`POST ${created.status}`);
        continue;
      }
      const id = created.body.ids[0];
      seen.createdIds.push(id);
      const patched = await api.patch(`/api/v1/clients/${id}`, { tier: 'Enterprise' });
      const read = await api.get(`/api/v1/clients/${id}`);
      seen.requests += 2;
      if (patched.status !== 200) seen.failures.push(`PATCH ${patched.status}`);
      if (read.status !== 200 || read.body.data.tier !== 'Enterprise') seen.failures.push(`GET after PATCH ${read.status} ${read.body?.data?.tier}`);
    }
  };
  const reader = async () => {
    while (!stop) {
      const page = await api.get(list.path);
      seen.requests++;
      if (page.status !== 200 || page.body.total < list.atLeast) seen.failures.push(`list ${page.status} ${page.body?.total}`);
    }
  };
  const load = [writer(1), writer(2), reader()];
  try {
    return { result: await operation(), seen };
  } finally {
    stop = true;
    await Promise.all(load);
  }
}

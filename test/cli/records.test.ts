import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrTool, type Csr } from '../support/cli.js';
import { client, startTestService, type TestService } from '../support/service.js';

/** `csr records duplicates`: an operator's way out of duplicates made before reservations, or by renames. */

let svc: TestService;
let csr: Csr;
let api: ReturnType<typeof client>;
let slug: string;

beforeAll(async () => {
  svc = await startTestService();
  const ws = await svc.workspace();
  slug = ws.slug;
  api = client(svc.url, (await ws.key()).key);
  csr = csrTool(svc.dataDir);
});
afterAll(() => svc.stop());

describe('csr records duplicates', () => {
  it('lists records sharing a name, then none once the operator renamed or deleted the extras', async () => {
    const made = await api.post('/api/v1/clients', [{ name: 'Acme' }, { name: 'Beta' }, { name: 'Gamma' }, { name: 'Delta' }]);
    const [acme, beta, gamma] = made.body.ids as string[];
    // Names are not unique: a rename can make two records share one (as could writes before reservations).
    expect((await api.patch(`/api/v1/clients/${beta}`, { name: 'ACME' })).status).toBe(200);
    expect((await api.patch(`/api/v1/clients/${gamma}`, { name: 'acme' })).status).toBe(200);
    expect((await api.post('/api/v1/clients', { name: 'Acme' })).body.errors[0].message).toBe('ambiguous match: 3 records');

    const groups = await csr.json<any[]>('records', 'duplicates', '--workspace', slug, 'clients');
    expect(groups).toEqual([{ key: { name: 'acme' }, count: 3, records: expect.any(Array) }]);
    expect(groups[0].records.map((r: any) => r.id)).toEqual([acme, beta, gamma]);

    // The way out (docs/concurrency.md): rename one, delete the other; the name matches one record again.
    expect((await api.patch(`/api/v1/clients/${beta}`, { name: 'Acme (old)' })).status).toBe(200);
    expect((await api.delete(`/api/v1/clients/${gamma}`)).status).toBe(200);
    expect(await csr.json('records', 'duplicates', '--workspace', slug, 'clients')).toEqual([]);
    expect((await api.post('/api/v1/clients', { name: 'acme', tier: 'SMB' })).body).toMatchObject({ updated: 1, ids: [acme] });
  });

  it('groups by --match fields, case-insensitively, and prints text without --json', async () => {
    await api.post('/api/v1/contacts', [
      { firstName: 'Ana', lastName: 'One', email: 'ana@x.test' },
      { firstName: 'Ana', lastName: 'Two', email: 'ANA@x.test' },
      { firstName: 'Bo', lastName: 'Three', email: 'bo@x.test' },
    ]);
    const groups = await csr.json<any[]>('records', 'duplicates', '--workspace', slug, 'contacts', '--match', 'email');
    expect(groups.map((g) => [g.key, g.count])).toEqual([[{ email: 'ana@x.test' }, 2]]);
    const text = await csr.run('records', 'duplicates', '--workspace', slug, 'contacts', '--match', 'email');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('ana@x.test');
  });

  it('fails clearly on an unknown workspace, object or field', async () => {
    expect(await csr.fails(1, 'records', 'duplicates', '--workspace', 'nope', 'clients')).toContain('workspace "nope" not found');
    expect(await csr.fails(1, 'records', 'duplicates', '--workspace', slug, 'planets')).toContain("unknown object 'planets'");
    expect(await csr.fails(1, 'records', 'duplicates', '--workspace', slug, 'contacts', '--match', 'shoeSize')).toContain("unknown field 'shoeSize'");
    expect(await csr.fails(2, 'records', 'duplicates', 'clients')).toContain('--workspace');
  });
});

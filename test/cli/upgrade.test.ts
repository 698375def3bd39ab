import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LINK_BACKFILL } from '../../projections/linkBackfill.js';
import { csrTool, type Csr } from '../support/cli.js';
import { repoRoot } from '../support/process.js';
import { client, startTestService, type TestService } from '../support/service.js';
import { eventually, until } from '../support/until.js';

/**
 * The upgrade path (issue 23): test/fixtures/release-store is a DATA_DIR written by the release
 * before the audit chain (workspace "legacy", key "Old key"; a client, an invoice with a line that
 * was then deleted, a client update). It keeps working, and its chain starts at the first new event.
 */

const CLIENT = '01a21359-faad-788c-9942-0f370dff0ea4';
const INVOICE = '01a21359-fc98-7d93-b926-edec3552b80c';
const LINE = '01a21359-fe78-7fbe-b0cd-9bb06be0fb4f';
/** The events the earlier release wrote into the fixture (none of them chained). */
const RELEASE_EVENTS = 9;

let dataDir: string;
let svc: TestService;
let csr: Csr;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'csr-upgrade-'));
  cpSync(join(repoRoot, 'test', 'fixtures', 'release-store'), dataDir, { recursive: true });
  svc = await startTestService({}, { dataDir });
  csr = csrTool(dataDir);
  // The backfill of link edges runs beside the projection at start.
  let marked = false;
  const poll = setInterval(() => void svc.service.backends.readStore.checkpoint(LINK_BACKFILL).then((at) => (marked = at !== null)), 5);
  await until(() => marked, 30_000, 'the link edges backfill').finally(() => clearInterval(poll));
});
afterAll(async () => {
  await svc.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a store written before the audit chain', () => {
  it('verifies: its events are counted as written before the chain, the chain starts at the first new one', async () => {
    const before = await csr.json<Record<string, any>>('audit', 'verify');
    expect(before).toMatchObject({ ok: true, unchained: RELEASE_EVENTS, firstBreak: null, differences: [] });
    // What the reactors appended on this first start (roll-ups, health scores) is chained already.
    expect(before.chained).toBe(before.events - RELEASE_EVENTS);

    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'legacy', '--name', 'New key');
    expect((await client(svc, key).patch(`/api/v1/clients/${CLIENT}`, { industry: 'Retail' })).status).toBe(200);
    const after = await csr.json<Record<string, any>>('audit', 'verify');
    expect(after).toMatchObject({ ok: true, unchained: RELEASE_EVENTS, firstBreak: null });
    expect(after.chained).toBe(after.events - RELEASE_EVENTS);
    expect(after.events).toBeGreaterThanOrEqual(before.events + 2);

    // The health score reactor scores the old client on its first start, in the background: "via
    // health score", in between, once it has (looked for, as a slow machine may not have yet).
    const historyOf = async () => (await client(svc, key).get(`/api/v1/clients/${CLIENT}/history`)).body.data as { via: string }[];
    const history = await eventually(historyOf, (entries) => entries.some((entry) => entry.via === 'via health score'), 30_000, 'the health score in the history');
    expect(history.map((entry: { via: string }) => entry.via).filter((via: string) => via !== 'via health score')).toEqual([
      'via API · Old key',
      'via API · Old key',
      'via API · New key',
    ]);
    expect(history.map((entry: { via: string }) => entry.via)).toContain('via health score');
  });

  it('reads as of a moment before the upgrade, with a roll-up over a child deleted before it', async () => {
    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', 'legacy', '--name', 'Reader', '--read-only');
    const api = client(svc, key);
    const [created, deleted] = (await api.get(`/api/v1/invoiceLines/${LINE}/history`)).body.data;
    expect((await api.get(`/api/v1/billing/${INVOICE}?as_of=${created.occurredAt}`)).body.data.subtotal).toBe(70);
    expect((await api.get(`/api/v1/billing/${INVOICE}?as_of=${deleted.occurredAt}`)).body.data.subtotal).toBe(0);
  });

  it('exports its events: the csr operator of then is a user, and old events carry no hash', async () => {
    const run = await csr.run('audit', 'export', '--workspace', 'legacy');
    expect(run.code).toBe(0);
    const [workspaceCreated] = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(workspaceCreated).toMatchObject({ type: 'WorkspaceCreated', actor: { type: 'user' }, via: 'via app', hash: null });
  });
});

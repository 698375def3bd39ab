import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startTestService, type TestService } from '../support/service.js';
import { mountSmallDisk } from '../support/smallDisk.js';

/**
 * Issue 22 item 7: with DATA_DIR's filesystem full, every write answers 507 with a clear message,
 * reads go on, nothing is half written, and writes succeed again once space is freed, without a
 * restart. On a real small filesystem (tmpfs); test/unit/storageFull.test.ts injects the error at
 * the ports where mounting is refused.
 */

const disk = mountSmallDisk(24);
let svc: TestService;
let api: ReturnType<typeof client>;

describe.skipIf(disk === null)('a full disk (tmpfs; mounting needs root)', () => {
  beforeAll(async () => {
    svc = await startTestService({}, { dataDir: disk!.dir });
    const ws = await svc.workspace();
    api = client(svc.url, (await ws.key()).key);
  });
  afterAll(async () => {
    disk!.free();
    await svc?.stop();
    disk!.unmount();
  });

  it('answers 507 on every write, keeps reads, and writes again once space is freed', async () => {
    const kept = (await api.post('/api/v1/clients', { name: 'Before the disk filled' })).body.ids[0] as string;
    const doomed = (await api.post('/api/v1/clients', { name: 'To delete' })).body.ids[0] as string;
    disk!.fill();

    const big = 'x'.repeat(50_000); // more than any page SQLite may still hold free
    const full = [
      await api.post('/api/v1/clients', { name: 'While full', notes: big }),
      await api.post('/api/v1/clients', [{ name: 'While full 1', notes: big }, { name: 'While full 2', notes: big }]),
      await api.patch(`/api/v1/clients/${kept}`, { notes: big }),
      await api.delete(`/api/v1/clients/${doomed}`),
    ];
    for (const response of full) {
      expect(response.status, JSON.stringify(response.body)).toBe(507);
      expect(response.body.error).toEqual({ status: 507, message: expect.stringMatching(/no storage space left; nothing was saved/) });
    }

    // Reads go on, and show nothing of the refused writes.
    const listed = await api.get('/api/v1/clients');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((record: any) => record.name).sort()).toEqual(['Before the disk filled', 'To delete']);
    const one = await api.get(`/api/v1/clients/${kept}`);
    expect(one.status).toBe(200);
    expect(one.body.data.notes).toBeNull();

    disk!.free();
    const created = await api.post('/api/v1/clients', { name: 'After', notes: big });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api.patch(`/api/v1/clients/${kept}`, { notes: 'freed' })).body.data.notes).toBe('freed');
    expect((await api.delete(`/api/v1/clients/${doomed}`)).status).toBe(200);
    const after = await api.get('/api/v1/clients');
    expect(after.body.data.map((record: any) => record.name).sort()).toEqual(['After', 'Before the disk filled']);
    // Numbers stayed gap-free: the refused creates took none.
    expect(after.body.data.map((record: any) => record.clientNumber).sort()).toEqual(['CL-00001', 'CL-00003']);
  });
});

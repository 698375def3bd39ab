import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { RECORDS_VERSION } from '../../projections/recordProjection.js';
import { loadConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/service.js';
import { createKey, dump, seed } from '../support/ops.js';
import { client } from '../support/service.js';
import { until } from '../support/until.js';
import { Sqlite } from '../../src/sqlite/driver.js';

/** Issue 24 item 3: a new projection version is rebuilt in the background and switched to once caught up. */

const dataDir = mkdtempSync(join(tmpdir(), 'csr-versions-'));
/** The version this release builds; the test plays the next release. */
const released = RECORDS_VERSION.current;
const next = String(released + 1);
afterAll(() => {
  RECORDS_VERSION.current = released;
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(lines: string[]): Promise<RunningService> {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().trim().split('\n'));
      done();
    },
  });
  return startService(loadConfig({ DATA_DIR: dataDir, PORT: '0' }), pino({ level: 'info' }, sink));
}

describe('projection versions', () => {
  it('rebuilds the read model when its projection version changes, serving the old generation meanwhile', async () => {
    const key = await createKey(dataDir);
    const first = await start([]);
    const api = client(first.url!, key);
    await seed(api, 400);
    const before = await dump(api);
    expect(await first.backends.readStore.generations()).toMatchObject({ live: 1, liveVersion: String(released), building: null });
    await first.stop();

    RECORDS_VERSION.current = released + 1;
    const lines: string[] = [];
    const second = await start(lines);
    try {
      const readStore = second.backends.readStore;
      const during = client(second.url!, key);
      let reads = 0;
      while ((await readStore.generations()).liveVersion !== next) {
        const page = await during.get('/api/v1/clients?limit=1');
        expect(page.status).toBe(200);
        expect(page.body.total).toBe(before['clients']!.length);
        reads++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(reads).toBeGreaterThan(0);
      expect(await readStore.generations()).toMatchObject({ live: 2, liveVersion: next, building: null });
      expect(await dump(during)).toEqual(before);
      // The rebuilt generation (bulk-loaded) holds every record's stored rendering.
      const file = new Sqlite(join(dataDir, 'read.db'), { readonly: true });
      try {
        const counts = file.prepare('SELECT count(*) AS documents, count(rendered) AS rendered FROM documents_g2').get() as { documents: number; rendered: number };
        expect(counts.documents).toBeGreaterThan(0);
        expect(counts.rendered).toBe(counts.documents);
      } finally {
        file.close();
      }
      const messages = () => lines.map((line) => JSON.parse(line)).filter((entry) => entry.projection === 'records').map((entry) => entry.msg);
      await until(() => messages().includes('rebuild done: reads switched to the new generation'), 30_000, 'the switch in the log');
      expect(messages()).toContain('projection version changed: rebuilding the read model in the background');
    } finally {
      await second.stop();
    }
  }, 120_000);
});

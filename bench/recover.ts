import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { openCliContext } from '../src/cli/context.js';
import { recordStream } from '../src/events/records.js';
import { RECORDS_PROJECTION } from '../src/readstore/port.js';
import { BENCH_CA_FILE, startBenchReceiver } from './webhooks.js';

/**
 * `csr webhooks recover` rate (issue 29): a log of BENCH_RECOVER_EVENTS single record events
 * (each its own action) of one workspace, then recover over the whole window to an HTTPS
 * receiver on loopback that answers 204 at once, run by the code `csr webhooks recover` runs
 * (WebhookSetup.recover, in this process). `node dist/bench/recover.js`; figures in docs/performance.md.
 */

const EVENTS = Number(process.env['BENCH_RECOVER_EVENTS'] ?? 50_000);
const ACTOR = { type: 'system' as const, id: 'bench', name: 'bench' };

const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-recover-'));
const receiver = await startBenchReceiver();
const config = loadConfig({ DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: BENCH_CA_FILE });
const context = await openCliContext(config);
try {
  const slug = `recover-${Date.now()}`;
  const workspace = await context.setup.createWorkspace(slug);
  const { webhook } = await context.webhooks.create(slug, { name: 'recover bench', url: `${receiver.origin}/recover`, objects: ['usageMetrics'] });
  const since = new Date().toISOString();

  const loadStart = performance.now();
  for (let written = 0; written < EVENTS; ) {
    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < 500 && written < EVENTS; i++, written++) {
      const recordId = randomUUID();
      const actionId = randomUUID();
      appends.push(
        context.backends.events.append(
          recordStream(recordId),
          [
            {
              id: randomUUID(),
              type: 'RecordCreated',
              data: { schemaVersion: 1, workspaceId: workspace.id, object: 'usageMetrics', recordId, fields: { name: `Metric ${written}`, aggregation: 'Sum' } },
              metadata: { source: 'import', actor: ACTOR, actionId, correlationId: actionId, causationId: actionId, actionCounts: { usageMetrics: 1 } },
            },
          ],
          { expectedRevision: 'no_stream' },
        ),
      );
    }
    await Promise.all(appends);
  }
  context.records();
  const head = (await context.backends.events.headPosition())!;
  if (!(await context.backends.readStore.waitForCheckpoint(RECORDS_PROJECTION, head, 600_000))) throw new Error('the records projection did not catch up');
  const loadSeconds = (performance.now() - loadStart) / 1000;

  const started = performance.now();
  const summary = await context.webhooks.recover(webhook.id, { since, failedOnly: false });
  const seconds = (performance.now() - started) / 1000;
  const received = receiver.arrivals('/recover').times.length;
  console.log(JSON.stringify({ events: EVENTS, loadSeconds: Number(loadSeconds.toFixed(1)), summary, received, seconds: Number(seconds.toFixed(1)), eventsPerSecond: Math.round(summary.resent / seconds) }));
} finally {
  await context.close();
  receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
}

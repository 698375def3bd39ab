import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * Webhook benchmarks (issue 3): fan-out and delivery throughput, commit-to-receipt latency at
 * 200 changes/s, and the throughput of four healthy receivers while a fifth never answers.
 * The service runs in its own process (started by run.ts); the receiver runs here.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../test/fixtures/${name}`, import.meta.url));
export const BENCH_CA_FILE = fixture('receiver-cert.pem');

/** Per path: arrival times, and commit-to-receipt latencies from the body's occurredAt. */
interface Arrivals {
  times: number[];
  latencies: number[];
}

export interface BenchReceiver {
  origin: string;
  hang(path: string): void;
  arrivals(path: string): Arrivals;
  close(): void;
}

export async function startBenchReceiver(): Promise<BenchReceiver> {
  const byPath = new Map<string, Arrivals>();
  const hanging = new Set<string>();
  const server = createServer({ cert: readFileSync(BENCH_CA_FILE), key: readFileSync(fixture('receiver-key.pem')) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      if (hanging.has(path)) return;
      const now = Date.now();
      const arrivals = byPath.get(path) ?? { times: [], latencies: [] };
      byPath.set(path, arrivals);
      arrivals.times.push(now);
      arrivals.latencies.push(now - Date.parse((JSON.parse(Buffer.concat(chunks).toString()) as { occurredAt: string }).occurredAt));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hang: (path) => hanging.add(path),
    arrivals: (path) => byPath.get(path) ?? { times: [], latencies: [] },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

export interface WebhookBenchDeps {
  receiver: BenchReceiver;
  /**
   * Runs `work` while only the API and the projector run, then starts a dispatcher process and
   * resolves with the time it started: throughput is measured from there, so it is the
   * dispatcher's and not the API's write rate.
   */
  withDispatcherAfter(work: () => Promise<void>): Promise<number>;
  /** Creates a workspace with webhooks to these paths; returns an API key of it. */
  workspaceWithWebhooks(paths: string[]): Promise<string>;
  /** POSTs records to the running service. */
  post(key: string, body: unknown): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForArrivals(receiver: BenchReceiver, paths: string[], each: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (paths.some((path) => receiver.arrivals(path).times.length < each)) {
    if (Date.now() > deadline) throw new Error(`webhook bench: deliveries missing after ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** `changes` record creations as 20-record requests (single events, not bulk), `parallel` at a time. */
async function load(deps: WebhookBenchDeps, key: string, changes: number, parallel = 8): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < changes) {
      const start = next;
      next += 20;
      await deps.post(key, Array.from({ length: Math.min(20, changes - start) }, (_, i) => ({ subject: `Bench ${start + i}`, status: 'Done' })));
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** Deliveries per second to `paths`, from the dispatcher's start (changes already in the log) to the last delivery received. */
async function throughput(deps: WebhookBenchDeps, paths: string[], hangingPath: string | null, changes: number): Promise<number> {
  if (hangingPath) deps.receiver.hang(hangingPath);
  const started = await deps.withDispatcherAfter(async () => {
    const key = await deps.workspaceWithWebhooks(hangingPath ? [...paths, hangingPath] : paths);
    await load(deps, key, changes);
  });
  await waitForArrivals(deps.receiver, paths, changes, 120_000);
  const last = Math.max(...paths.map((path) => Math.max(...deps.receiver.arrivals(path).times)));
  return (paths.length * changes) / ((last - started) / 1000);
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

type Row = { scenario: string; result: string; target: string };

/** Throughput with the changes already in the log, all receivers healthy, then one of five silent. */
export async function webhookThroughput(deps: WebhookBenchDeps): Promise<Row[]> {
  const changes = 2_000;
  const allHealthy = await throughput(deps, ['/a1', '/a2', '/a3', '/a4', '/a5'], null, changes);
  const withOneSilent = await throughput(deps, ['/b1', '/b2', '/b3', '/b4'], '/b5', changes);
  const perReceiverHealthy = allHealthy / 5;
  const perReceiverSilent = withOneSilent / 4;
  return [
    { scenario: `webhook fan-out + delivery, 5 webhooks x ${changes.toLocaleString('en')} changes waiting in the log`, result: `${Math.round(allHealthy).toLocaleString('en')} deliveries/s`, target: '>= 2,000 deliveries/s' },
    {
      scenario: 'webhook throughput per healthy receiver, one of five never answering',
      result: `${Math.round(perReceiverSilent).toLocaleString('en')}/s vs ${Math.round(perReceiverHealthy).toLocaleString('en')}/s all healthy (${Math.round((100 * perReceiverSilent) / perReceiverHealthy)}%)`,
      target: '>= 90%',
    },
  ];
}

/** Commit-to-receipt at 200 changes/s, on a service running every role in one process. */
export async function webhookLatency(deps: WebhookBenchDeps, durationS: number): Promise<Row[]> {
  const key = await deps.workspaceWithWebhooks(['/lag']);
  const total = 200 * durationS;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    pending.push(deps.post(key, { subject: `Lag ${i}`, status: 'Done' }));
    await sleep(5);
  }
  await Promise.all(pending);
  await waitForArrivals(deps.receiver, ['/lag'], total, 60_000);
  const latencies = deps.receiver.arrivals('/lag').latencies;
  return [
    {
      scenario: `webhook commit-to-receipt (${total} changes at 200/s, from the log commit time)`,
      result: `p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms`,
      target: 'p99 <= 250 ms',
    },
  ];
}

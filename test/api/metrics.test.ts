import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { csrTool } from '../support/cli.js';
import { spawnServer, type ServerProcess } from '../support/process.js';
import { client } from '../support/service.js';
import { until } from '../support/until.js';

/** GET /metrics of a real server process, in the Prometheus text format (issue 24 item 5). */

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.kill();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});


async function server(env: Record<string, string>): Promise<{ server: ServerProcess; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-metrics-'));
  dirs.push(dataDir);
  const started = await spawnServer({ DATA_DIR: dataDir, ...env });
  servers.push(started);
  return { server: started, dataDir };
}

const PROMTOOL = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));

/**
 * `promtool check metrics` when installed (it parses, then lints). The only lint findings allowed
 * are prom-client's own default gauges named `nodejs_active_*_total`: the library's names, which
 * the standard Node.js dashboards look for, so they are kept as they are (issue 39 item 7).
 * Without promtool, every line must be a comment or `name{labels} value`.
 */
function checkFormat(text: string): void {
  if (PROMTOOL) {
    const result = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    const findings = `${result.stdout}${result.stderr}`.trim().split('\n').filter(Boolean);
    for (const finding of findings) expect(finding).toMatch(/^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/);
    expect(result.status === 0 || findings.length > 0).toBe(true);
  } else {
    // The text format ignores empty lines (prom-client leaves one between some families). Values
    // are read as Go's ParseFloat reads them, NaN and Inf in any case: prom-client writes a
    // histogram without samples yet (the event loop's, scraped right after start) as "Nan".
    for (const line of text.trimEnd().split('\n').filter((line) => line !== '')) {
      expect(line).toMatch(/^(# (HELP|TYPE) [a-zA-Z_:][\w:]* .+|[a-zA-Z_:][\w:]*(\{([a-zA-Z_]\w*="([^"\\]|\\.)*",?)*\})? (-?\d+(\.\d+)?(e[+-]?\d+)?|[Nn][Aa][Nn]|[+-][Ii][Nn][Ff]))$/);
    }
  }
  // The service's own series carry its prefix; prom-client's defaults keep the library's names.
  const names = [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!);
  for (const name of names) expect(name).toMatch(/^(csr_|process_|nodejs_)/);
  expect(names.filter((name) => /^csr_(process|nodejs)_/.test(name))).toEqual([]);
}

/** The value of one series (name with its labels, exactly as exposed). */
function value(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  if (!line) throw new Error(`no series ${series} in:\n${text.slice(0, 2000)}`);
  return Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  it('serves the series on METRICS_PORT (127.0.0.1), changing under load; not on the API port', async () => {
    // Port 0: the server takes a free one and says which (no window in which another could take it).
    const { server: running, dataDir } = await server({ METRICS_PORT: '0', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_DELAYS: '1h' });
    const metricsUrl = running.started().find((service) => service.metricsUrl !== null)?.metricsUrl;
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    // The start line comes once the whole server has started, which may be after the line above.
    await until(() => running.output().includes(`metrics on ${metricsUrl}`), 20_000, 'the start line naming the metrics URL');
    // Its receiver does not answer: every delivery fails its first attempt and waits for a retry.
    const csr = csrTool(dataDir, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    const { slug } = await csr.json<{ slug: string }>('workspaces', 'create', 'measured');
    const { key } = await csr.json<{ key: string }>('keys', 'create', '--workspace', slug, '--name', 'load');
    await csr.json('webhooks', 'create', '--workspace', slug, '--name', 'hook', '--url', 'https://127.0.0.1:9/hook');
    const api = client(running.url, key);
    expect((await fetch(`${running.url}/metrics`)).status).toBe(404);

    const scrape = async () => {
      const response = await fetch(metricsUrl!);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return response.text();
    };
    await api.post('/api/v1/clients', { name: 'first' });
    const before = await scrape();
    checkFormat(before);
    for (let i = 0; i < 20; i++) expect((await api.post('/api/v1/clients', { name: `load ${i}` })).status).toBe(201);
    const created = (await api.get('/api/v1/clients?limit=1')).body.data[0].id;
    await api.get(`/api/v1/clients/${created}`);
    await api.get('/api/v1/clients/00000000-0000-4000-8000-000000000000');
    const after = await scrape();
    checkFormat(after);

    const posts = 'csr_http_request_duration_seconds_count{route="/api/v1/:object",method="POST",status="201"}';
    expect(value(after, posts) - value(before, posts)).toBe(20);
    expect(value(after, 'csr_http_request_duration_seconds_count{route="/api/v1/:object/:id",method="GET",status="200"}')).toBe(1);
    expect(value(after, 'csr_http_request_duration_seconds_count{route="/api/v1/:object/:id",method="GET",status="404"}')).toBe(1);
    expect(value(after, 'csr_event_appends_duration_seconds_count{outcome="ok"}')).toBeGreaterThan(value(before, 'csr_event_appends_duration_seconds_count{outcome="ok"}'));
    expect(after).toContain('csr_event_appends_duration_seconds_bucket{le="0.005",outcome="ok"}');
    expect(value(after, 'csr_append_conflicts_total')).toBe(0);
    expect(value(after, 'csr_projection_lag_events{projection="records"}')).toBe(0);
    expect(value(after, 'csr_projection_lag_seconds{projection="records"}')).toBe(0);
    // The webhook fan-out's consumer group, as `csr projections status` lists it.
    expect(after).toMatch(/^csr_projection_lag_events\{projection="webhooks"\} \d+$/m);
    expect(after).toMatch(/^csr_projection_lag_seconds\{projection="webhooks"\} [\d.e+-]+$/m);
    expect(value(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(value(after, 'csr_webhook_deliveries_in_flight')).toBeGreaterThanOrEqual(0);
    expect(value(after, 'csr_webhook_deliveries{status="delivered"}')).toBe(0);
    // The dispatcher (another thread) fans the 21 changes out; they wait for their retry.
    // Generous: a CI runner busy with other test files fans out and settles slowly.
    const deadline = Date.now() + 45_000;
    let text = after;
    while (value(text, 'csr_webhook_deliveries{status="retrying"}') < 21 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      text = await scrape();
    }
    expect(value(text, 'csr_webhook_retry_queue_depth')).toBe(21);
    expect(value(text, 'csr_webhook_deliveries{status="retrying"}')).toBe(21);
    expect(value(text, 'csr_webhook_oldest_pending_seconds')).toBeGreaterThan(0);
    expect(after).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    expect(after).toContain('# TYPE process_resident_memory_bytes gauge');
    expect(after).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
  }, 90_000);

  it('METRICS=on serves them on the API port, without a key', async () => {
    const { server: running } = await server({ METRICS: 'on' });
    const response = await fetch(`${running.url}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    checkFormat(text);
    expect(text).toContain('# TYPE csr_http_request_duration_seconds histogram');
  }, 60_000);
});

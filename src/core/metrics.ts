import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics: one registry per process, made by the composition root and
 * passed down to what records into it (no global registry). Instrumentation points call these
 * few methods; the series are listed in docs/operations.md.
 */
export interface Metrics {
  registry: Registry;
  /** One HTTP answer: route template (e.g. /api/v1/:object/:id), method, status, seconds. */
  httpRequest(route: string, method: string, status: number, seconds: number): void;
  /** One append to the log: its outcome and how long it took. */
  append(outcome: 'ok' | 'conflict' | 'error', seconds: number): void;
  /** A gauge computed when scraped, e.g. a projection's lag read from the stores. */
  gauge(name: string, help: string, labelNames: string[], collect: (set: (labels: Record<string, string>, value: number) => void) => Promise<void>): void;
}

/**
 * The service's own series start with this. prom-client's default process and Node.js metrics
 * keep the library's names (`process_cpu_seconds_total`, `nodejs_eventloop_lag_seconds`): the
 * standard Node.js dashboards and alerts look for exactly those, and a `job` label, not a name
 * prefix, tells services apart.
 */
export const METRIC_PREFIX = 'csr_';

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const http = new Histogram({
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: 'HTTP requests by route template, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const appends = new Histogram({
    name: `${METRIC_PREFIX}event_appends_duration_seconds`,
    help: 'Appends to the event log by outcome (ok, conflict, error) and their latency',
    labelNames: ['outcome'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  const conflicts = new Counter({
    name: `${METRIC_PREFIX}append_conflicts_total`,
    help: 'Appends refused for a wrong expected revision (each one makes its command retry)',
    registers: [registry],
  });
  return {
    registry,
    httpRequest(route, method, status, seconds) {
      http.observe({ route, method, status: String(status) }, seconds);
    },
    append(outcome, seconds) {
      appends.observe({ outcome }, seconds);
      if (outcome === 'conflict') conflicts.inc();
    },
    gauge(name, help, labelNames, collect) {
      new Gauge({
        name: `${METRIC_PREFIX}${name}`,
        help,
        labelNames,
        registers: [registry],
        async collect() {
          this.reset();
          await collect((labels, value) => this.set(labels, value));
        },
      });
    },
  };
}

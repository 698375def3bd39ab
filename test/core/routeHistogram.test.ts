import { Histogram, Registry, type Metric } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RouteHistogram } from '../../src/core/routeHistogram.js';

/** The HTTP histogram must expose exactly what prom-client's Histogram does for the same observations. */

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
const OBSERVATIONS: [string, string, number, number][] = [
  ['/api/v1/:object/:id', 'GET', 200, 0.0004],
  ['/api/v1/:object/:id', 'GET', 200, 0.001], // on a bound: counted in it
  ['/api/v1/:object', 'POST', 201, 0.03],
  ['/api/v1/:object/:id', 'GET', 404, 0.002],
  ['/api/v1/:object/:id', 'GET', 200, 12], // above every bound: +Inf only
  ['unmatched', 'GET', 404, 0.0001],
  ['/api/v1/:object', 'POST', 201, 0.25],
];

function both() {
  const theirs = new Registry();
  const reference = new Histogram({ name: 'h_seconds', help: 'help text', labelNames: ['route', 'method', 'status'], buckets: BUCKETS, registers: [theirs] });
  const ours = new Registry();
  const routeHistogram = new RouteHistogram('h_seconds', 'help text', BUCKETS);
  ours.registerMetric(routeHistogram as unknown as Metric);
  for (const [route, method, status, seconds] of OBSERVATIONS) {
    reference.observe({ route, method, status: String(status) }, seconds);
    routeHistogram.observe(route, method, status, seconds);
  }
  return { theirs, ours, routeHistogram };
}

const lines = (text: string) => text.split('\n').sort();

describe('RouteHistogram', () => {
  it('writes the same Prometheus text as a prom-client Histogram (series in another order)', async () => {
    const { theirs, ours } = both();
    const text = await ours.metrics();
    expect(lines(text)).toEqual(lines(await theirs.metrics()));
    expect(text).toContain('h_seconds_bucket{le="0.001",route="/api/v1/:object/:id",method="GET",status="200"} 2');
    expect(text).toContain('h_seconds_count{route="/api/v1/:object/:id",method="GET",status="200"} 3');
  });

  it('gives the same JSON, and reset empties it', async () => {
    const { theirs, ours } = both();
    const sorted = (metrics: { values: { labels: object; metricName?: string }[] }[]) =>
      metrics[0]!.values.map((value) => JSON.stringify(value)).sort();
    expect(sorted(await ours.getMetricsAsJSON())).toEqual(sorted(await theirs.getMetricsAsJSON()));
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});

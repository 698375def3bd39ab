/**
 * The HTTP histogram (route, method, status), kept by the series themselves: prom-client's
 * Histogram validates and hashes its label object on every observation, a labelled child
 * included, and the API observes every request. Here a request finds its series through three
 * Map lookups and counts into it. It is registered in the prom-client registry as a metric of its
 * own and exposes exactly what a prom-client Histogram with the same observations would
 * (test/core/routeHistogram.test.ts compares the two).
 */

interface Series {
  labels: { route: string; method: string; status: string };
  /** Observations per bucket (not cumulative), in upperBounds' order; the last is above them all. */
  counts: number[];
  sum: number;
  count: number;
}

interface ValuePair {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  /** prom-client's buckets carry one (null without exemplars); kept for the same JSON. */
  exemplar?: null;
}

export class RouteHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private series = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly upperBounds: readonly number[],
  ) {}

  observe(route: string, method: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) {
      series = { labels: { route, method, status: String(status) }, counts: new Array<number>(this.upperBounds.length + 1).fill(0), sum: 0, count: 0 };
      byStatus.set(status, series);
    }
    let bucket = 0;
    while (bucket < this.upperBounds.length && seconds > this.upperBounds[bucket]!) bucket++;
    series.counts[bucket]! += 1;
    series.sum += seconds;
    series.count += 1;
  }

  /** What the registry's text exposition reads: bucket lines with the series' labels shared. */
  async getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: string; values: ValuePair[] }> {
    const values: ValuePair[] = [];
    for (const byMethod of this.series.values()) {
      for (const byStatus of byMethod.values()) {
        for (const series of byStatus.values()) values.push(...this.valuesOf(series));
      }
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The JSON form (registry.getMetricsAsJSON): each value's labels with the series' own merged in. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: ValuePair[] }> {
    const metric = await this.getForPromString();
    metric.values = metric.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return metric;
  }

  reset(): void {
    this.series = new Map();
  }

  private valuesOf(series: Series): ValuePair[] {
    const bucketName = `${this.name}_bucket`;
    let cumulative = 0;
    const values: ValuePair[] = this.upperBounds.map((le, index) => {
      cumulative += series.counts[index]!;
      return { labels: { le }, sharedLabels: series.labels, value: cumulative, metricName: bucketName, exemplar: null };
    });
    values.push(
      { labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: bucketName, exemplar: null },
      { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
      { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
    );
    return values;
  }
}

import { describe, expect, it } from 'vitest';
import { httpTable, type HttpRow, type Measured, type Scenario } from '../../bench/table.js';

const measured = (requestsPerSecond: number, cpuUs: number | null = null, p99Ms = 5): Measured =>
  ({ requestsPerSecond, p99Ms, cpuUs }) as Measured;

/** A row of the embedded store's stage, against a bare Hono that ran at 10,000 req/s around it. */
function row(scenario: Scenario, server: HttpRow['server'], requestsPerSecond: number, options: { cpuUs?: number; p99Ms?: number; processes?: number } = {}): HttpRow {
  return {
    scenario,
    stage: '10k records',
    server,
    backend: 'embedded',
    processes: options.processes ?? 1,
    measured: measured(requestsPerSecond, options.cpuUs ?? null, options.p99Ms),
    baseline: measured(10_000),
    commitMs: null,
  };
}

/** The target column of the service's row, the table's last cell. */
function targetOf(rows: HttpRow[]): string {
  const line = httpTable(rows)
    .split('\n')
    .find((text) => text.includes('this service'))!;
  return line.split('|').at(-2)!.trim();
}

describe('the bench table: issue 44 goals for the embedded store, against Emmett and bare Hono of the same run', () => {
  it.each([
    // given the service's and Emmett's req/s (bare Hono at 10,000), then the target cell
    ['POST one record', 8_000, 1_000, {}, '>= 25% of bare met, >= 8x Emmett met'],
    ['POST one record', 7_900, 1_000, {}, '>= 25% of bare met, >= 8x Emmett MISSED'],
    ['POST one record', 2_400, 200, {}, '>= 25% of bare MISSED, >= 8x Emmett met'],
    ['GET one record', 7_000, 5_000, { cpuUs: 40 }, '>= 70% of bare met, >= 1.3x Emmett met, <= 55 µs CPU met'],
    ['GET one record', 6_900, 5_000, { cpuUs: 60 }, '>= 70% of bare MISSED, >= 1.3x Emmett met, <= 55 µs CPU MISSED'],
    ['GET one record', 7_000, 6_000, {}, '>= 70% of bare met, >= 1.3x Emmett MISSED, <= 55 µs CPU (no figure)'],
    ['GET list', 5_000, 1_000, { p99Ms: 20 }, '>= 5x Emmett met, p99 <= 50 ms met'],
    ['GET list', 4_900, 1_000, { p99Ms: 60 }, '>= 5x Emmett MISSED, p99 <= 50 ms MISSED'],
  ] as const)('%s: the service at %d req/s, Emmett at %d', (scenario, service, emmett, options, expected) => {
    expect(targetOf([row(scenario, 'this service', service, options), row(scenario, 'Emmett', emmett)])).toBe(expected);
  });

  it('holds two API processes to their scaling over one, and Emmett to nothing', () => {
    const rows = [row('GET list', 'this service', 3_000), row('GET list', 'this service', 5_100, { processes: 2 }), row('GET list', 'Emmett', 1_000)];
    const lines = httpTable(rows).split('\n').slice(2);
    expect(lines[1]!.split('|').at(-2)!.trim()).toBe('>= 1.7x 1 process met, p99 <= 50 ms met');
    expect(lines[2]!.split('|').at(-2)!.trim()).toBe('');
  });
});

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

describe('the bench table on PostgreSQL: the database server CPU beside the server under test', () => {
  const pgRow = (server: HttpRow['server'], requestsPerSecond: number, cpuUs: number, serverCpuUs: number | null): HttpRow => ({
    scenario: 'POST one record',
    stage: '100k records, PostgreSQL',
    server,
    backend: 'postgres',
    processes: 1,
    measured: { ...measured(requestsPerSecond, cpuUs), serverCpuUs },
    baseline: measured(10_000),
    commitMs: null,
  });
  /** The cells of the service's row: CPU per request, then Emmett's CPU over it. */
  const cells = (rows: HttpRow[]) => {
    const line = httpTable(rows).split('\n').find((text) => text.includes('this service'))!.split('|').map((cell) => cell.trim());
    return { cpu: line[5], cpuVsEmmett: line[8] };
  };

  it.each([
    // given the service's and Emmett's CPU per request (the process, then the database server's), then the cells
    [[400, 500], [300, 100], { cpu: '400 + 500', cpuVsEmmett: '0.44x' }],
    [[400, 100], [600, 400], { cpu: '400 + 100', cpuVsEmmett: '2.00x' }],
    [[400, null], [300, 100], { cpu: '400 + ?', cpuVsEmmett: '' }],
  ] as const)('service %j, Emmett %j', ([serviceCpu, serviceServer], [emmettCpu, emmettServer], expected) => {
    expect(cells([pgRow('this service', 1_000, serviceCpu, serviceServer), pgRow('Emmett', 1_000, emmettCpu, emmettServer)])).toEqual(expected);
  });

  it('shows the process CPU alone on the embedded store, where no database server works', () => {
    const line = httpTable([row('POST one record', 'this service', 1_000, { cpuUs: 280 })]).split('\n')[2]!.split('|');
    expect(line[5]!.trim()).toBe('280');
  });
});

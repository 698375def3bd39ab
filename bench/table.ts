import type { LoadResult } from './wrk.js';

/**
 * The HTTP table of `npm run bench`. Every row is a server under one scenario's load, with the
 * bare Hono endpoint's rate measured just before and just after it: the machine's speed drifts within a run, so
 * each rate is read as a share of that baseline, and the ratio of two servers in one scenario is
 * the ratio of their shares (each against its own baseline), not of their raw rates. CPU time per
 * request moves less than a rate when neighbours take the cores, so the rows also compare that.
 */

/**
 * `cpuUs`: the server under test's CPU per request (its processes); `serverCpuUs`: on PostgreSQL,
 * the database server's (the backends of the database the server under test uses), null where it
 * cannot be read (a server on another machine) and absent on the embedded store.
 */
export type Measured = LoadResult & { cpuUs: number | null; serverCpuUs?: number | null };

/**
 * 'GET one record, pipelined': the same GETs with 16 in flight per connection, for the service's
 * scaling over API processes. Two API processes and wrk share two cores; pipelining makes wrk's
 * share of them small, so what the row shows is the service's scaling, not the load generator's.
 */
export type Scenario = 'POST one record' | 'GET one record' | 'GET one record, pipelined' | 'GET list';

export interface HttpRow {
  scenario: Scenario;
  /** What the scenario ran on (records loaded, filter matches); rows compare within one stage. */
  stage: string;
  server: 'this service' | 'Emmett';
  /** The store under both: the embedded one (Emmett on SQLite) or PostgreSQL (Emmett on PostgreSQL). */
  backend: 'embedded' | 'postgres';
  processes: number;
  measured: Measured;
  baseline: Measured;
  /** POST: one fsync'd SQLite commit measured just before (the disk drifts too). */
  commitMs: number | null;
}

const share = (row: HttpRow) => row.measured.requestsPerSecond / row.baseline.requestsPerSecond;

/** The issue's targets, for the service's rows; null where a scenario has none. */
function target(row: HttpRow, vsEmmett: number | null, vsOne: number | null): string {
  const checks: [string, boolean | null][] = [];
  const atLeast = (label: string, value: number | null, floor: number) => checks.push([label, value === null ? null : value >= floor]);
  if (row.server !== 'this service') return '';
  if (row.backend === 'postgres') {
    if (row.processes !== 1) return '';
    if (row.scenario === 'POST one record') atLeast('>= 2x Emmett on PostgreSQL', vsEmmett, 2);
    if (row.scenario === 'GET one record') atLeast('>= 1.3x Emmett on PostgreSQL', vsEmmett, 1.3);
    if (row.scenario === 'GET list') atLeast('>= 2x Emmett on PostgreSQL', vsEmmett, 2);
  } else if (row.processes === 1) {
    // Issue 44 raised three of the earlier goals: POST 5x -> 8x Emmett, GET 45% -> 70% of bare, list 2x -> 5x.
    if (row.scenario === 'POST one record') (atLeast('>= 25% of bare', share(row), 0.25), atLeast('>= 8x Emmett', vsEmmett, 8));
    if (row.scenario === 'GET one record') {
      atLeast('>= 70% of bare', share(row), 0.7);
      atLeast('>= 1.3x Emmett', vsEmmett, 1.3);
      checks.push(['<= 55 µs CPU', row.measured.cpuUs === null ? null : row.measured.cpuUs <= 55]);
    }
    if (row.scenario === 'GET list') (atLeast('>= 5x Emmett', vsEmmett, 5), checks.push(['p99 <= 50 ms', row.measured.p99Ms <= 50]));
  } else if (row.scenario !== 'POST one record') {
    atLeast('>= 1.7x 1 process', vsOne, 1.7);
    if (row.scenario === 'GET list') checks.push(['p99 <= 50 ms', row.measured.p99Ms <= 50]);
  }
  return checks.map(([label, met]) => `${label} ${met === null ? '(no figure)' : met ? 'met' : 'MISSED'}`).join(', ');
}

// wrk times a pipelined connection's batch, not each request: no per-request p99 to show.
const p99 = (row: HttpRow) => (row.scenario === 'GET one record, pipelined' ? '' : row.measured.p99Ms.toFixed(1));
const int = (value: number) => Math.round(value).toLocaleString('en');
const times = (value: number | null) => (value === null ? '' : `${value.toFixed(2)}x`);

/**
 * A request's CPU for the comparison with Emmett: on PostgreSQL the database server's share too,
 * where most of a write's work is done; null when a part of it is unknown.
 */
function cpuOf(measured: Measured): number | null {
  if (measured.cpuUs === null || measured.serverCpuUs === null) return null;
  return measured.cpuUs + (measured.serverCpuUs ?? 0);
}

const cpuCell = (measured: Measured) => {
  if (measured.cpuUs === null) return '';
  if (measured.serverCpuUs === undefined) return int(measured.cpuUs);
  return `${int(measured.cpuUs)} + ${measured.serverCpuUs === null ? '?' : int(measured.serverCpuUs)}`;
};

export function httpTable(rows: HttpRow[]): string {
  const lines = [
    '| scenario | server | req/s | p99 ms | CPU µs/req (+ database server) | of bare Hono (its req/s, CPU µs/req around it) | x Emmett | Emmett CPU/req over this | x 1 process | target |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const same = (other: HttpRow) => other.scenario === row.scenario && other.stage === row.stage && other.backend === row.backend;
    const peer = rows.find((other) => same(other) && other.server === 'Emmett');
    const one = rows.find((other) => same(other) && other.server === row.server && other.processes === 1);
    const vsEmmett = peer && row !== peer ? share(row) / share(peer) : null;
    const vsOne = one && row !== one ? share(row) / share(one) : null;
    const peerCpu = peer ? cpuOf(peer.measured) : null;
    const rowCpu = cpuOf(row.measured);
    const cpuVsEmmett = peer && row !== peer && peerCpu !== null && rowCpu ? peerCpu / rowCpu : null;
    const { measured, baseline } = row;
    const server = row.server === 'Emmett' ? 'Emmett' : `this service, API_PROCESSES=${row.processes}`;
    const bare = `${Math.round(100 * share(row))}% (${int(baseline.requestsPerSecond)}, ${baseline.cpuUs === null ? '?' : int(baseline.cpuUs)}${row.commitMs === null ? '' : `; one commit ${row.commitMs.toFixed(2)} ms`})`;
    lines.push(
      `| ${row.scenario}, ${row.stage} | ${server} | ${int(measured.requestsPerSecond)} | ${p99(row)} | ${cpuCell(measured)} | ${bare} | ${times(vsEmmett)} | ${times(cpuVsEmmett)} | ${times(vsOne)} | ${target(row, vsEmmett, vsOne)} |`,
    );
  }
  return lines.join('\n');
}

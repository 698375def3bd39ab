import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * HTTP load by wrk, a load generator written in C. On a two-core machine the generator shares the
 * cores with the server: autocannon (Node) took a whole core and capped even the bare Hono POST
 * at about 4,000 req/s, where wrk leaves the server most of the second core (bare POST about
 * 12,000 req/s here). The varying part of each request is written in wrk's Lua.
 */

export interface LoadOptions {
  url: string;
  connections: number;
  durationS: number;
  headers?: Record<string, string>;
  /** A Lua `request` function (see wrk's SCRIPTING), for requests that differ; else GET `url`. */
  request?: string;
  /** Lua statements run once per thread before the first request (data for `request`). */
  prelude?: string;
  /**
   * Requests sent back to back on a connection before its answers are read (HTTP pipelining;
   * default 1). wrk then counts every answer but times the batch: its p99 is a batch's.
   */
  pipeline?: number;
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p99Ms: number;
  /** Non-2xx/3xx answers, timeouts and socket errors. */
  failures: number;
}

const lua = (value: string) => JSON.stringify(value); // a JSON string is a valid Lua string literal here (ASCII)

/** Lua making each `request` call return `depth` requests in one buffer (wrk's pipelining). */
function pipelined(depth: number, ownRequest: boolean): string[] {
  if (depth <= 1) return [];
  return [
    `local single = ${ownRequest ? 'request' : 'function() return wrk.format() end'}`,
    `request = function() local batch = {} for i = 1, ${depth} do batch[i] = single() end return table.concat(batch) end`,
  ];
}

export async function wrk(options: LoadOptions): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'csr-wrk-'));
  const script = join(dir, 'load.lua');
  const headers = Object.entries(options.headers ?? {}).map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}`);
  writeFileSync(
    script,
    [
      ...headers,
      options.prelude ?? '',
      options.request ?? '',
      ...pipelined(options.pipeline ?? 1, options.request !== undefined),
      'done = function(summary, latency, requests)',
      '  local e = summary.errors',
      '  io.write(string.format("RESULT {\\"requests\\":%d,\\"us\\":%d,\\"p99\\":%d,\\"failures\\":%d}\\n",',
      '    summary.requests, summary.duration, latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))',
      'end',
    ].join('\n'),
  );
  try {
    const { stdout } = await promisify(execFile)('wrk', ['-t1', `-c${options.connections}`, `-d${options.durationS}s`, '--timeout', '10s', '-s', script, options.url], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const line = stdout.split('\n').find((candidate) => candidate.startsWith('RESULT '));
    if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
    const result = JSON.parse(line.slice('RESULT '.length)) as { requests: number; us: number; p99: number; failures: number };
    return { requests: result.requests, requestsPerSecond: result.requests / (result.us / 1e6), p99Ms: result.p99 / 1000, failures: result.failures };
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') throw new Error('npm run bench needs wrk on the PATH (Debian/Ubuntu: apt-get install wrk; macOS: brew install wrk)');
    throw error;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

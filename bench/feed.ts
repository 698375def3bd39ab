import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { treeCpuMs } from './cpu.js';
import { csr } from './http.js';
import { percentile, type TextRow } from './measure.js';
import { spawnServer, stop } from './servers.js';

/**
 * The change feed's figures (issue 43), on a server process of its own (embedded store, every role):
 * - read rate: a sync client reading the whole feed from the start in pages of 1,000, one page
 *   after the other, over FEED_EVENTS record events written by 1,000-record POSTs (the median of
 *   three full reads);
 * - long-poll latency: a caught-up client long-polls (`wait=30`) and another client writes one
 *   record; how long after the write the poll answers with it (LONG_POLLS times, one at a time).
 * `BENCH_ONLY=feed` for this part alone; `BENCH_FEED_EVENTS` (default 100,000), `BENCH_FEED_POLLS` (default 100).
 */

const FEED_EVENTS = Number(process.env['BENCH_FEED_EVENTS'] ?? 100_000);
const LONG_POLLS = Number(process.env['BENCH_FEED_POLLS'] ?? 100);
const PAGE = 1_000;

type Page = { data: { id: string; data: { id: string } }[]; next: string; hasMore: boolean };

export async function feedBench(): Promise<TextRow[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'csr-bench-feed-'));
  csr(dataDir, 'workspaces', 'create', 'feed');
  const key = csr(dataDir, 'keys', 'create', '--workspace', 'feed', '--name', 'bench').key as string;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const server = await spawnServer('dist/src/main.js', { DATA_DIR: dataDir });
  try {
    const page = async (after: string, extra = ''): Promise<Page> => {
      const response = await fetch(`${server.url}/api/v1/events?limit=${PAGE}&after=${after}${extra}`, { headers });
      if (response.status !== 200) throw new Error(`feed bench: GET /api/v1/events answered ${response.status} ${(await response.text()).slice(0, 300)}`);
      return (await response.json()) as Page;
    };
    const post = async (body: unknown) => {
      const response = await fetch(`${server.url}/api/v1/tasks`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (response.status !== 201) throw new Error(`feed bench load failed: ${response.status} ${(await response.text()).slice(0, 300)}`);
      return (await response.json()) as { ids: string[] };
    };

    for (let written = 0; written < FEED_EVENTS; written += PAGE) {
      await post(Array.from({ length: Math.min(PAGE, FEED_EVENTS - written) }, (_, i) => ({ subject: `Feed task ${written + i}`, status: 'Not started' })));
    }
    /** Reads the feed from `after` to its end, a page at a time: the events read and the cursor at the end. */
    const readAll = async (after = '') => {
      let cursor = after;
      let events = 0;
      for (;;) {
        const read = await page(cursor);
        events += read.data.length;
        cursor = read.next;
        if (!read.hasMore && read.data.length === 0) return { events, cursor };
      }
    };
    // The projection catches up with the load first: the reads measure the feed, not the wait for it.
    for (let seen = 0, cursor = ''; ; ) {
      const read = await readAll(cursor);
      seen += read.events;
      cursor = read.cursor;
      if (seen >= FEED_EVENTS) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // Beside the rate, the server's CPU time per event: the rate on a host shared with other work
    // says what the host gave, the CPU time what the feed costs (bench/cpu.ts).
    const rates: number[] = [];
    const cpuPerEvent: number[] = [];
    for (let run = 0; run < 3; run++) {
      const cpuBefore = treeCpuMs(server.child.pid!);
      const started = performance.now();
      const { events } = await readAll();
      rates.push(events / ((performance.now() - started) / 1000));
      const cpuAfter = treeCpuMs(server.child.pid!);
      if (cpuBefore !== null && cpuAfter !== null) cpuPerEvent.push(((cpuAfter - cpuBefore) * 1000) / events);
    }
    const middle = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
    const rate = middle(rates);
    const cpu = cpuPerEvent.length > 0 ? `; server CPU ${middle(cpuPerEvent).toFixed(1)} µs per event (${Math.round(1_000_000 / middle(cpuPerEvent)).toLocaleString('en')} events per CPU-second)` : '';

    // Long polls: one waits, a write lands, the poll's answer is timed from the write's request and from its answer.
    let cursor = (await readAll()).cursor;
    const fromSent: number[] = [];
    const fromAcknowledged: number[] = [];
    for (let poll = 0; poll < LONG_POLLS; poll++) {
      const waiting = (async () => {
        const answer = await page(cursor, '&wait=30');
        return { answer, at: performance.now() };
      })();
      // Long enough for the poll to be waiting in the server (a poll that finds the event at once would measure nothing).
      await new Promise((resolve) => setTimeout(resolve, 50));
      const sent = performance.now();
      const { ids } = await post({ subject: `Polled ${poll}`, status: 'Not started' });
      const acknowledged = performance.now();
      const { answer, at } = await waiting;
      if (answer.data.length !== 1 || answer.data[0]!.data.id !== ids[0]) throw new Error(`feed bench: the long poll answered ${JSON.stringify(answer.data.map((item) => item.data.id))}, not the record written`);
      cursor = answer.next;
      fromSent.push(at - sent);
      fromAcknowledged.push(Math.max(0, at - acknowledged));
    }
    const ms = (samples: number[]) => `p50 ${percentile(samples, 50).toFixed(1)} ms, p99 ${percentile(samples, 99).toFixed(1)} ms, max ${Math.max(...samples).toFixed(1)} ms`;
    return [
      { scenario: `change feed: read from the start in pages of ${PAGE} (${FEED_EVENTS.toLocaleString('en')} events, median of 3)`, result: `${Math.round(rate).toLocaleString('en')} events/s (runs: ${rates.map((each) => Math.round(each).toLocaleString('en')).join(', ')})${cpu}`, target: '>= 20,000 events/s' },
      { scenario: `change feed: long poll answered after a write's request (${LONG_POLLS} polls)`, result: ms(fromSent), target: '<= 50 ms' },
      { scenario: `change feed: long poll answered after the write's answer (${LONG_POLLS} polls)`, result: ms(fromAcknowledged), target: '' },
    ];
  } finally {
    await stop(server.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

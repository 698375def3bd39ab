import { expect } from 'vitest';
import type { ApiClient } from './service.js';

/**
 * The load of the "numbers after a crash" tests (issue 39 item 2), the same on every backend:
 * single creates and 900-record upserts run together until `acknowledgedAtLeast` records are
 * written (answered 201, or 503 "recorded"; names made unique by `tag`), then `kill` ends the server with SIGKILL while writes are still in flight.
 */
export async function killUnderCreates(api: ApiClient, kill: () => Promise<void>, acknowledgedAtLeast = 2500, loadMs = 60_000, tag = ''): Promise<number> {
  let acknowledged = 0;
  let killed = false;
  const other: string[] = [];
  const single = async (worker: number) => {
    for (let i = 0; !killed; i++) {
      try {
        const response = await api.post('/api/v1/clients', { name: `Crash${tag} ${worker}-${i}` });
        if (response.status === 201 || recorded(response)) acknowledged++;
        else other.push(`${response.status} ${JSON.stringify(response.body).slice(0, 200)}`);
      } catch {
        return; // the connection died with the server
      }
    }
  };
  const bulk = async (worker: number) => {
    for (let i = 0; !killed; i++) {
      const records = Array.from({ length: 900 }, (_, n) => ({ name: `Bulk${tag} ${worker}-${i}-${n}` }));
      try {
        const response = await api.post('/api/v1/clients', records);
        if (response.status === 201 || recorded(response)) acknowledged += 900;
        else other.push(`${response.status} ${JSON.stringify(response.body).slice(0, 200)}`);
      } catch {
        return;
      }
    }
  };
  const writers = [...Array.from({ length: 12 }, (_, w) => single(w)), bulk(0), bulk(1)];
  const deadline = Date.now() + loadMs;
  while (acknowledged < acknowledgedAtLeast && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(acknowledged, `records written within ${loadMs} ms; other answers: ${other.slice(0, 3).join(', ')}`).toBeGreaterThanOrEqual(acknowledgedAtLeast);
  killed = true;
  await kill();
  await Promise.all(writers);
  return acknowledged;
}

/** A 503 that says the write is in the log, its read model behind (the answer waits for it at most 10 s). */
function recorded(response: { status: number; body: { error?: { message?: string } } }): boolean {
  return response.status === 503 && /recorded/.test(response.body?.error?.message ?? '');
}

/** Every client's number (the digits of clientNumber), sorted. */
export async function allNumbers(api: ApiClient): Promise<number[]> {
  const numbers: number[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await api.get(`/api/v1/clients?limit=1000&offset=${offset}`);
    expect(page.status).toBe(200);
    for (const record of page.body.data) numbers.push(Number(String(record.clientNumber).replace(/^\D+/, '')));
    if (offset + 1000 >= page.body.total) return numbers.sort((a, b) => a - b);
  }
}

/**
 * After the restart: one more create (its answer waits for the read model to show it, and so
 * everything written before it), then the numbers must be 1..N with no hole, at least one per
 * acknowledged record, and the new one N.
 */
export async function expectNoGap(after: ApiClient, acknowledged: number): Promise<void> {
  let next = await after.post('/api/v1/clients', { name: 'After the crash' });
  // The read model may still be replaying what came before (503 "recorded"): the same upsert again
  // matches the record by its name once it shows, and so once everything before it shows too.
  for (let tries = 0; recorded(next) && tries < 30; tries++) next = await after.post('/api/v1/clients', { name: 'After the crash' });
  expect([200, 201], JSON.stringify(next.body)).toContain(next.status);
  const numbers = await allNumbers(after);
  expect(numbers.length).toBeGreaterThanOrEqual(acknowledged + 1);
  const holes = numbers.filter((n, i) => n !== i + 1);
  expect(holes.slice(0, 5), `numbers with a hole before them, of ${numbers.length}`).toEqual([]);
  const created = await after.record('clients', next.body.ids[0]);
  expect(Number(String(created.clientNumber).replace(/^\D+/, ''))).toBe(numbers.length);
}

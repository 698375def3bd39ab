import { expect } from 'vitest';
import { addDays } from '../../src/schema/dates.js';
import { client, type ApiClient, type TestService } from './service.js';
import { startWebhookHarness, type WebhookHarness } from './webhookHarness.js';

/** What the automation suites (playbook rules, health score, `csr import`) stand on. */

/**
 * The service's clock in the reactor suites: a test moves it days ahead to reach a date trigger or
 * the next daily pass, and `reset` sets it back to the real time (a wrong clock corrected).
 */
export class TestClock {
  private at = new Date();
  /** What the service reads. */
  readonly now = (): Date => this.at;

  today(): string {
    return this.at.toISOString().slice(0, 10);
  }

  /** The date `offset` days from the clock's today. */
  day(offset: number): string {
    return addDays(this.today(), offset)!;
  }

  advanceDays(days: number): void {
    this.at = new Date(this.at.getTime() + days * 86_400_000);
  }

  reset(): void {
    this.at = new Date();
  }
}

/** A webhook harness whose service runs on `clock` and looks for its daily pass every 50 ms. */
export function startReactorHarness(clock: TestClock): Promise<WebhookHarness> {
  return startWebhookHarness({ REACTOR_DAILY_CHECK: '50ms' }, { clock: clock.now });
}

/** A new workspace with two users, Ana Lima and Bo Chen, and a key's API client over HTTP. */
export async function teamWorkspace(svc: TestService) {
  const ws = await svc.workspace();
  const api = client(svc.url, (await ws.key()).key);
  const ana = await ws.addUser('Ana Lima', 'ana@x.test');
  const bo = await ws.addUser('Bo Chen', 'bo@x.test');
  return { ws, api, ana, bo };
}

/** POSTs to /api/v1/{path}, fails the test unless it is saved, and answers the (first) record id. */
export async function saveRecord(api: ApiClient, path: string, body: unknown): Promise<string> {
  const saved = await api.post(`/api/v1/${path}`, body);
  expect(saved.status, JSON.stringify(saved.body)).toBeLessThan(300);
  return saved.body.ids[0];
}

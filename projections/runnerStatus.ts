import type { Logger } from 'pino';
import type { ReadStore, RunnerStatus } from '../src/readstore/port.js';

/**
 * A runner's (or a rebuild's) events per second over the last minute and its last error, kept in
 * the read store every few seconds (and at once on an error) so that `csr projections status`
 * shows them from any process, also after the server stopped.
 */

const WINDOW_MS = 60_000;
const SAVE_EVERY_MS = 5_000;

export class StatusReporter {
  /** [time, events] per committed batch of the last minute. */
  private readonly samples: [number, number][] = [];
  private status: RunnerStatus;
  private readonly timer: NodeJS.Timeout;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    private readonly readStore: ReadStore,
    name: string,
    private readonly logger: Logger,
  ) {
    this.status = { name, eventsPerSecond: 0, lastError: null, lastErrorAt: null, failing: false, updatedAt: new Date().toISOString() };
    this.timer = setInterval(() => this.save(), SAVE_EVERY_MS);
    this.timer.unref();
  }

  applied(events: number): void {
    this.samples.push([Date.now(), events]);
    if (this.status.failing) {
      this.status = { ...this.status, failing: false };
      this.save();
    }
  }

  failed(error: unknown): void {
    this.status = { ...this.status, lastError: error instanceof Error ? error.message : String(error), lastErrorAt: new Date().toISOString(), failing: true };
    this.save();
  }

  /** Events per second over the last minute (or since the first batch, when younger). */
  rate(now = Date.now()): number {
    while (this.samples.length > 0 && this.samples[0]![0] < now - WINDOW_MS) this.samples.shift();
    const events = this.samples.reduce((sum, [, n]) => sum + n, 0);
    return Math.round((events / (WINDOW_MS / 1000)) * 10) / 10;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.save();
    await this.saving;
  }

  private save(): void {
    this.status = { ...this.status, eventsPerSecond: this.rate(), updatedAt: new Date().toISOString() };
    const status = this.status;
    this.saving = this.saving
      .then(() => this.readStore.saveRunnerStatus(status))
      .catch((error: unknown) => this.logger.debug({ err: error }, 'projection status not saved'));
  }
}

/**
 * The sleep of a loop that waits between looks (the webhook delivery loop's poll, a subscription's
 * reconnect backoff): `interrupt` ends it at once, when there is work or the loop stops, so that
 * neither waits out the full delay. An interrupt while no sleep is under way does nothing.
 */
export class InterruptibleSleep {
  private interruptSleep: (() => void) | null = null;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.interruptSleep = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.interruptSleep = done;
    });
  }

  interrupt(): void {
    this.interruptSleep?.();
  }
}

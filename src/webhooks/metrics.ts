import type { Metrics } from '../core/metrics.js';
import type { DeliveryStats, WebhookStore } from './port.js';

/**
 * Webhook delivery gauges, read from the delivery store when scraped: they hold for every
 * dispatcher (any thread, process or node), not only one that would share this registry.
 */
export function webhookGauges(metrics: Metrics, webhooks: WebhookStore, clock: () => Date = () => new Date()): void {
  let pending: Promise<DeliveryStats> | null = null;
  // One read of the store serves the gauges of a scrape.
  const stats = () => {
    pending ??= webhooks.deliveryStats(clock().toISOString()).finally(() => setTimeout(() => (pending = null), 100));
    return pending;
  };
  metrics.gauge('webhook_deliveries', 'Deliveries kept (30 days) by outcome: waiting, retrying, delivered, failed, skipped', ['status'], async (set) => {
    for (const [status, count] of Object.entries((await stats()).byStatus)) set({ status }, count);
  });
  metrics.gauge('webhook_deliveries_in_flight', 'Delivery attempts under way (claimed by a dispatcher, not settled)', [], async (set) => {
    set({}, (await stats()).inFlight);
  });
  metrics.gauge('webhook_retry_queue_depth', 'Deliveries waiting for a retry after a failed attempt', [], async (set) => {
    set({}, (await stats()).retrying);
  });
  metrics.gauge('webhook_oldest_pending_seconds', 'Age of the oldest delivery not sent yet (0 when none)', [], async (set) => {
    const oldest = (await stats()).oldestPendingAt;
    set({}, oldest === null ? 0 : Math.max(0, (clock().getTime() - Date.parse(oldest)) / 1000));
  });
}

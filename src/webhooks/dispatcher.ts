import type { Actor } from '../eventstore/port.js';
import { appendAuditEvent } from '../setup/audit.js';
import { createBulkFlusher } from './bulkFlusher.js';
import { startDeliveryLoop, type DeliveryLoopDeps } from './deliveryLoop.js';
import { startFanOut, type FanOutDeps } from './fanOut.js';
import { RETENTION_MS } from './policy.js';

/**
 * The dispatcher role: fan-out from the persistent subscription, bulk events, the delivery loop
 * and the 30-day purge. Several dispatchers may run: they compete for the subscription's events
 * and claim deliveries with leases.
 */

const BULK_FLUSH_MS = 250;
const PURGE_EVERY_MS = 60 * 60 * 1000;

/** The dispatcher's own actions in the audit trail (the automatic switch-off). */
export const DISPATCHER_ACTOR: Actor = { type: 'system', id: 'webhook-dispatcher', name: 'webhook dispatcher' };

/** What the fan-out and the delivery loop need, but the callbacks between them, which the dispatcher wires. */
export type DispatcherDeps = Omit<FanOutDeps, 'onStored'> & Omit<DeliveryLoopDeps, 'onSwitchedOff'>;

export interface RunningDispatcher {
  /**
   * Whether the dispatcher is joined to the event store and fanning out; false while a dropped
   * subscription is being re-made (logged as an error). For /health/ready.
   */
  ready(): boolean;
  stop(): Promise<void>;
}

export function startDispatcher(deps: DispatcherDeps): RunningDispatcher {
  const logger = deps.logger.child({ role: 'dispatcher' });
  const deliveries = startDeliveryLoop({
    ...deps,
    logger,
    onSwitchedOff: async (webhook, reason) => {
      await appendAuditEvent(deps.events, DISPATCHER_ACTOR, webhook.workspaceId, 'WebhookSwitchedOff', { webhookId: webhook.id, reason });
    },
  });
  const bulk = createBulkFlusher({ webhooks: deps.webhooks, logger, clock: deps.clock });

  let flushing: Promise<void> = Promise.resolve();
  const flushBulk = () => {
    flushing = flushing
      .then(() => bulk.flush())
      .then((made) => {
        if (made > 0) deliveries.wake();
      })
      .catch((error: unknown) => logger.error({ err: error }, 'bulk webhook events could not be made; trying again shortly'));
  };
  const fanOut = startFanOut({
    ...deps,
    logger,
    onStored: () => {
      deliveries.wake();
      flushBulk();
    },
  });
  const bulkTimer = setInterval(flushBulk, BULK_FLUSH_MS);

  const purge = () => {
    const before = new Date(deps.clock().getTime() - RETENTION_MS).toISOString();
    deps.webhooks.purge(before).then(
      (deleted) => deleted > 0 && logger.info({ deleted, before }, 'old deliveries purged'),
      (error: unknown) => logger.error({ err: error }, 'old deliveries could not be purged'),
    );
  };
  purge();
  const purgeTimer = setInterval(purge, PURGE_EVERY_MS);

  return {
    ready: fanOut.ready,
    async stop() {
      clearInterval(bulkTimer);
      clearInterval(purgeTimer);
      await fanOut.stop();
      await flushing;
      await deliveries.stop();
    },
  };
}

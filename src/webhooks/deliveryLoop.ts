import type { Logger } from 'pino';
import { InterruptibleSleep } from '../core/interruptibleSleep.js';
import { attemptDelivery } from './attempt.js';
import type { WebhookSender } from './httpsSender.js';
import { autoSwitchOffReason } from './policy.js';
import type { AttemptOutcome, ClaimedDelivery, Webhook, WebhookStore } from './port.js';

/**
 * Sends due deliveries concurrently, with a bound in all and a smaller one per webhook, so that a
 * receiver that never answers (or a webhook with thousands of due retries) holds only its own
 * slots while the others keep flowing. A claimed delivery is leased: if this process dies
 * mid-send, the lease runs out and another attempt is made (at least once).
 */

export interface DeliveryLimits {
  concurrency: number;
  perWebhook: number;
}

export const DEFAULT_LIMITS: DeliveryLimits = { concurrency: 128, perWebhook: 16 };

/** Due retries and other processes' deliveries (csr, other dispatchers) are looked for this often. */
const POLL_MS = 250;
/** Outcomes are written together, at most this long after the first of them. */
const SETTLE_DELAY_MS = 5;

export interface DeliveryLoopDeps {
  webhooks: WebhookStore;
  sender: WebhookSender;
  logger: Logger;
  clock: () => Date;
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  limits?: DeliveryLimits;
  /** Told when a webhook was switched off automatically (for the audit trail). */
  onSwitchedOff(webhook: Webhook, reason: string): Promise<void>;
}

export interface DeliveryLoop {
  /** Something may be due now: look at once instead of at the next poll. */
  wake(): void;
  stop(): Promise<void>;
}

export function startDeliveryLoop(deps: DeliveryLoopDeps): DeliveryLoop {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const logger = deps.logger.child({ component: 'webhook delivery' });
  const inFlight = new Map<string, number>();
  const sends = new Set<Promise<void>>();
  let total = 0;
  let stopped = false;
  const poll = new InterruptibleSleep();
  let woken = false;
  const settler = createSettler(deps, logger, (at) => wakeAt(at));

  const wake = () => {
    woken = true;
    poll.interrupt();
  };
  // One timer for the earliest retry this process scheduled, so a retry goes out on time, not at the next poll.
  let retryTimer: { at: number; timer: NodeJS.Timeout } | null = null;
  const wakeAt = (at: number) => {
    if (stopped || (retryTimer && retryTimer.at <= at)) return;
    if (retryTimer) clearTimeout(retryTimer.timer);
    const timer = setTimeout(() => {
      retryTimer = null;
      wake();
    }, Math.max(0, at - deps.clock().getTime()));
    timer.unref();
    retryTimer = { at, timer };
  };
  const start = (claimed: ClaimedDelivery) => {
    const webhookId = claimed.webhook.id;
    inFlight.set(webhookId, (inFlight.get(webhookId) ?? 0) + 1);
    total += 1;
    const send = attemptDelivery(claimed, deps.sender, deps.clock, deps.retryDelaysMs)
      .then((outcome) => settler.add(outcome, { workspaceId: claimed.webhook.workspaceId, eventId: claimed.delivery.eventId }))
      .catch((error: unknown) => logger.error({ err: error, deliveryId: claimed.delivery.id }, 'delivery attempt failed unexpectedly; it is retried when its lease ends'))
      .finally(() => {
        inFlight.set(webhookId, inFlight.get(webhookId)! - 1);
        total -= 1;
        sends.delete(send);
        wake();
      });
    sends.add(send);
  };

  const run = async () => {
    while (!stopped) {
      woken = false;
      const free = limits.concurrency - total;
      let claimed: ClaimedDelivery[] = [];
      if (free > 0) {
        try {
          const now = deps.clock();
          // The lease outlives the timeout, so that a slow answer is never sent twice in parallel.
          const leaseUntil = new Date(now.getTime() + deps.timeoutMs + 5_000).toISOString();
          claimed = await deps.webhooks.claimDue(now.toISOString(), leaseUntil, free, (id) => limits.perWebhook - (inFlight.get(id) ?? 0));
        } catch (error) {
          logger.error({ err: error }, 'could not claim due deliveries');
        }
      }
      for (const item of claimed) start(item);
      if (claimed.length === 0 && !woken && !stopped) await poll.sleep(POLL_MS);
    }
  };
  const running = run();

  return {
    wake,
    async stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer.timer);
      wake();
      await running;
      await Promise.all(sends);
      await settler.flush();
    },
  };
}

/** What the warn line of a delivery that gave up names besides the outcome (never the secret). */
interface AttemptContext {
  workspaceId: string;
  eventId: string;
}

/** Collects attempt outcomes and writes them in one transaction; then applies the automatic switch-off. */
function createSettler(deps: DeliveryLoopDeps, logger: Logger, retryAt: (at: number) => void) {
  let pending: (AttemptOutcome & AttemptContext)[] = [];
  let scheduled: Promise<void> | null = null;

  const flush = async (): Promise<void> => {
    const outcomes = pending;
    pending = [];
    scheduled = null;
    if (outcomes.length === 0) return;
    try {
      const touched = await deps.webhooks.settle(outcomes.map(({ workspaceId: _w, eventId: _e, ...outcome }) => outcome));
      for (const outcome of outcomes) {
        if (outcome.nextAttemptAt) retryAt(Date.parse(outcome.nextAttemptAt));
        if (outcome.status === 'failed') logGaveUp(logger, outcome);
        else if (!outcome.succeeded) logger.info({ deliveryId: outcome.deliveryId, webhookId: outcome.webhookId, status: outcome.status, error: outcome.error }, 'delivery attempt failed');
      }
      for (const webhook of touched) await switchOffIfDue(deps, logger, webhook, outcomes.findLast((outcome) => outcome.webhookId === webhook.id)?.responseCode ?? null);
    } catch (error) {
      logger.error({ err: error, outcomes: outcomes.length }, 'could not record delivery outcomes; those deliveries are retried when their lease ends');
    }
  };

  return {
    add(outcome: AttemptOutcome, context: AttemptContext): Promise<void> {
      pending.push({ ...outcome, ...context });
      scheduled ??= new Promise((resolve) => setTimeout(resolve, SETTLE_DELAY_MS)).then(flush);
      return scheduled;
    },
    flush,
  };
}

/** An operational event (as Svix's `message.attempt.exhausted`): the last attempt of a delivery failed. */
function logGaveUp(logger: Logger, outcome: AttemptOutcome & AttemptContext): void {
  logger.warn(
    {
      webhookId: outcome.webhookId,
      workspace: outcome.workspaceId,
      eventId: outcome.eventId,
      deliveryId: outcome.deliveryId,
      attempts: outcome.attempts,
      responseCode: outcome.responseCode,
      reason: outcome.error,
    },
    'webhook delivery failed for good: no more attempts',
  );
}

async function switchOffIfDue(deps: DeliveryLoopDeps, logger: Logger, webhook: Webhook, lastResponseCode: number | null): Promise<void> {
  const reason = autoSwitchOffReason(webhook, deps.clock());
  if (!reason) return;
  // The log first (as an admin's switch): the fan-out goes by it, and finishes the switch-off if
  // this process dies before the store has it.
  await deps.onSwitchedOff({ ...webhook, enabled: false, disabledReason: reason }, reason);
  const off = await deps.webhooks.setEnabled(webhook.id, false, reason);
  if (!off) return;
  logger.warn({ webhookId: webhook.id, workspace: webhook.workspaceId, failures: webhook.consecutiveFailures, reason, lastResponseCode }, 'webhook switched off automatically');
}

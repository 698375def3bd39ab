import { PARK, PersistentSubscriptionExistsError, RETRY } from '@eventstore/db-client';
import type { Filter, PersistentSubscriptionToAll, PersistentSubscriptionToAllResolvedEvent, PersistentSubscriptionToAllSettings } from '@eventstore/db-client';
import type { PersistentEvent, PersistentSubscription, PersistentSubscriptionOptions } from '../port.js';
import { DEFAULT_RETRY_BACKOFF, retryDelayMs } from '../port.js';
import { Control, release, tracked, type SubscriptionContext } from './control.js';
import {
  GroupSettingsRefused,
  PERSISTENT_DEFAULTS,
  backoffDelay,
  classifyGroupCommandError,
  classifySubscriptionError,
  groupUpdate,
  inFlightLimit,
  matchesFilter,
  nackBackoff,
  persistentGroupSettings,
  refusalReason,
  toRecordedEvent,
  toServerFilter,
} from './mapping.js';

/**
 * The persistent subscription of the EventStoreDB adapter: it rejoins the group after failures;
 * events handed out and not acked before a failure are handed out again by the server (at least
 * once). Acks and nacks for events of a connection that has dropped are ignored.
 */

/** The group's settings as this code makes them (retries, timeout; a new group starts at the end). */
function groupSettings(ctx: SubscriptionContext, options: PersistentSubscriptionOptions) {
  return persistentGroupSettings({
    ...(options.maxRetryCount !== undefined ? { maxRetryCount: options.maxRetryCount } : {}),
    messageTimeoutMs: ctx.messageTimeoutMs ?? PERSISTENT_DEFAULTS.messageTimeoutMs,
  });
}

/** A refusal of the server becomes GroupSettingsRefused (permanent); anything else is passed on. */
function refusedOr(group: string, error: unknown): unknown {
  return classifyGroupCommandError(error) === 'refused' ? new GroupSettingsRefused(group, refusalReason(error)) : error;
}

/** Creates the group when missing; an existing one keeps its checkpoint and settings (its subscriber updates those). */
export async function ensurePersistentGroup(ctx: SubscriptionContext, group: string, options: PersistentSubscriptionOptions = {}): Promise<void> {
  ctx.assertOpen();
  try {
    await ctx.client.createPersistentSubscriptionToAll(group, groupSettings(ctx, options), { filter: toServerFilter(options.filter) });
  } catch (error) {
    if (!(error instanceof PersistentSubscriptionExistsError)) throw refusedOr(group, error);
  }
}

/**
 * A consumer's join: creates the group, or brings an existing one's settings in line with this
 * code's (retries, timeout, buffers) when they differ, keeping its start point (groupUpdate): an
 * update makes the server rebuild the group and drop its consumers, so a group that already has
 * these settings is not touched. The server cannot change a group's filter; the consumer filters
 * again on its side (matchesFilter). A refusal rejects with GroupSettingsRefused.
 */
export async function joinGroup(
  ctx: Pick<SubscriptionContext, 'client' | 'logger'>,
  group: string,
  settings: PersistentSubscriptionToAllSettings,
  filter: Filter,
): Promise<void> {
  const { client, logger } = ctx;
  try {
    await client.createPersistentSubscriptionToAll(group, settings, { filter });
    return;
  } catch (error) {
    if (!(error instanceof PersistentSubscriptionExistsError)) throw refusedOr(group, error);
  }
  // Not a command: its failures are the server's state (starting, or the group deleted meanwhile), never a refusal.
  const plan = groupUpdate(await client.getPersistentSubscriptionToAllInfo(group), settings);
  if (plan === 'keep') return;
  if (plan === 'deferred') {
    logger?.warn({ group }, 'EventStoreDB persistent subscription group has other settings but no checkpoint yet: left as it is (an update now would restart it at the end of the log)');
    return;
  }
  logger?.warn({ group, changed: plan.changed }, 'EventStoreDB persistent subscription group settings updated (its consumers reconnect)');
  try {
    await client.updatePersistentSubscriptionToAll(group, plan.settings);
  } catch (error) {
    throw refusedOr(group, error);
  }
}

export function persistentSubscription(ctx: SubscriptionContext, group: string, subscribeOptions: PersistentSubscriptionOptions = {}): PersistentSubscription {
  const { client, logger, open } = ctx;
  ctx.assertOpen();
  const messageTimeoutMs = ctx.messageTimeoutMs ?? PERSISTENT_DEFAULTS.messageTimeoutMs;
  const requested = subscribeOptions.bufferSize ?? PERSISTENT_DEFAULTS.bufferSize;
  const settings = groupSettings(ctx, subscribeOptions);
  const serverFilter = toServerFilter(subscribeOptions.filter);
  // The consumer's own in-flight limit (the subscribe call's), independent of the group's buffers.
  const bufferSize = inFlightLimit(requested, messageTimeoutMs);
  const backoff = nackBackoff(subscribeOptions.retryBackoff ?? DEFAULT_RETRY_BACKOFF, messageTimeoutMs);
  let live = false;
  const control = new Control();
  let current: { sub: PersistentSubscriptionToAll; connection: Connection } | null = null;

  async function* events(): AsyncGenerator<PersistentEvent> {
    let attempt = 0;
    let groupReady = false;
    while (!control.closed) {
      if (!groupReady) {
        try {
          await joinGroup(ctx, group, settings, serverFilter);
          groupReady = true;
        } catch (error) {
          if (control.closed) return;
          if (error instanceof GroupSettingsRefused) {
            logger?.error({ err: error, group, reason: error.reason }, 'EventStoreDB refused the persistent subscription group; not retrying');
            throw error;
          }
          // A group deleted between the create and the look at its settings is created on the next try.
          if (classifySubscriptionError(error) === 'fatal') throw error;
          logger?.warn({ err: error, group, attempt }, 'EventStoreDB persistent subscription group not created yet; retrying');
          await control.sleep(backoffDelay(attempt++));
          continue;
        }
      }
      const sub = client.subscribeToPersistentSubscriptionToAll(group, { bufferSize });
      sub.on('confirmation', () => (live = true));
      const connection: Connection = { alive: true, pending: new Set() };
      current = { sub, connection };
      try {
        for await (const resolved of sub as AsyncIterable<PersistentSubscriptionToAllResolvedEvent>) {
          attempt = 0;
          const event = toRecordedEvent(resolved);
          if (event === null || !matchesFilter(event, subscribeOptions.filter)) {
            await settle(connection, () => sub.ack(resolved));
            continue;
          }
          yield {
            event,
            retryCount: resolved.retryCount,
            ack: () => settle(connection, () => sub.ack(resolved)),
            nack: async (action, reason) => {
              // The server would hand a retried event out again at once: wait first, longer each time.
              if (action === 'retry') await control.sleepFor(retryDelayMs(resolved.retryCount, backoff));
              await settle(connection, () => sub.nack(action === 'park' ? PARK : RETRY, reason, resolved));
            },
          };
          if (control.closed) return;
        }
        if (control.closed) return;
        logger?.error({ group }, 'EventStoreDB persistent subscription ended by the server; rejoining');
      } catch (error) {
        connection.alive = false; // acks can no longer reach the server: it redelivers instead
        if (control.closed) return;
        const kind = classifySubscriptionError(error);
        if (kind === 'fatal') throw error;
        if (kind === 'group-missing') groupReady = false;
        logger?.error({ err: error, group, attempt }, 'EventStoreDB persistent subscription dropped; rejoining');
      } finally {
        live = false;
        current = null;
        if (connection.alive) await drain(connection);
        connection.alive = false;
        await release(sub);
      }
      await control.sleep(backoffDelay(attempt++));
    }
  }

  const { iterator, close } = tracked(open, control, events, async () => {
    const closing = current;
    if (!closing) return;
    // Let acks already given reach the server before the call is cancelled, so that the group
    // does not hand those events out again.
    await drain(closing.connection);
    closing.connection.alive = false;
    await release(closing.sub);
  });
  return { [Symbol.asyncIterator]: () => iterator, close, connected: () => live && !control.closed };
}

/** Milliseconds to wait for an ack/nack write before giving up on it (the server redelivers). */
const SETTLE_TIMEOUT_MS = 10_000;

/** One call of a persistent subscription: whether it still carries acks, and the acks under way. */
interface Connection {
  alive: boolean;
  pending: Set<Promise<void>>;
}

/** Time for acks written to the call to leave the process before the call is cancelled. */
const DRAIN_GRACE_MS = 50;

async function drain(connection: Connection): Promise<void> {
  await Promise.allSettled([...connection.pending]);
  await new Promise((resolve) => setTimeout(resolve, DRAIN_GRACE_MS));
}

/**
 * Acks/nacks through the connection that delivered the event. When that connection has dropped,
 * the ack cannot reach the server and the server hands the event out again: resolve quietly.
 */
async function settle(connection: Connection, write: () => Promise<void>): Promise<void> {
  if (!connection.alive) return;
  let timer: NodeJS.Timeout | undefined;
  const writing = Promise.race([
    write(),
    new Promise<void>((_, reject) => {
      timer = setTimeout(() => reject(new Error('EventStoreDB did not take the ack in time')), SETTLE_TIMEOUT_MS);
    }),
  ]);
  connection.pending.add(writing);
  try {
    await writing;
  } catch (error) {
    if (!connection.alive) return;
    throw error;
  } finally {
    clearTimeout(timer);
    connection.pending.delete(writing);
  }
}

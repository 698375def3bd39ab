import { comparePositions } from '../eventstore/position.js';
import { workspaceStream } from '../events/workspace.js';
import { renderData, singlePayload, type Change, type RenderDeps } from './fanOut.js';
import { isBulk, recordChange } from './policy.js';
import type { Delivery, Redelivery, Webhook } from './port.js';
import { BulkRebuilder, type RebuiltBulk } from './recoverBulk.js';
import { redeliverNow, type SendNowDeps } from './sendNow.js';
import { timelineOf } from './timeline.js';

/**
 * `csr webhooks recover` (issue 29): sends a webhook, again and in log order, the record events of
 * a time window that its filters match, also those made while it was off (the operator's
 * explicit choice). The rule:
 * - filters: those in force at the time of each event, by the log (the webhook's creation event,
 *   then each edit from its position on);
 * - events: record events of its workspace committed in [since, until) and after its creation;
 *   saves that only recalculate derived fields are left out, as the fan-out leaves them out;
 * - with failedOnly: only events whose deliveries to this webhook include a failed one and none
 *   that was delivered or is still waiting or retrying;
 * - bulk members (> 20 records of an object in one action) are rebuilt into their
 *   `<object>.<kind>.bulk` events as live delivery made them, under the same ids (recoverBulk.ts);
 * - `data` is rendered as the fan-out renders it (the record as it is now; as last saved if deleted).
 * Each event becomes a new delivery with cause 'recover', sent now by the one sender and signer.
 * An abort (Ctrl-C) stops it between chunks of sends; the summary's resumeSince says where to go on.
 */

export interface RecoverWindow {
  since: Date;
  until: Date;
  failedOnly: boolean;
}

export interface RecoverSummary {
  /** New deliveries made and attempted. */
  resent: number;
  /** Of those, not delivered at once (retried on the usual schedule while the webhook is on). */
  notDelivered: number;
  /** Matching events not sent: records that can no longer be rendered. */
  skipped: number;
  /**
   * Set when the run was interrupted: the log time of the first event not sent. Running again
   * with `--since` this time goes on from there (events of that same millisecond already sent
   * are sent once more; receivers drop repeats by event id).
   */
  resumeSince?: string;
}

export type RecoverDeps = RenderDeps & SendNowDeps;

/** Events rendered together (each is sent one after the other, in log order). */
const BATCH = 200;
/** Deliveries stored and sent together: an interruption waits for at most these. */
const SEND_CHUNK = 20;

export async function recoverWebhook(
  deps: RecoverDeps,
  webhook: Webhook,
  window: RecoverWindow,
  progress: (summary: RecoverSummary) => void = () => {},
  signal: AbortSignal = new AbortController().signal,
): Promise<RecoverSummary> {
  const summary: RecoverSummary = { resent: 0, notDelivered: 0, skipped: 0 };
  const head = await deps.events.headPosition();
  if (!head) return summary;
  const configurations = timelineOf(await deps.events.readStream(workspaceStream(webhook.workspaceId))).filter(
    (entry) => entry.webhookId === webhook.id && (entry.type === 'WebhookCreated' || entry.type === 'WebhookChanged'),
  );
  const created = configurations[0];
  let filters = { events: created?.events ?? webhook.events, objects: created?.objects ?? webhook.objects };
  let next = 1;
  const since = window.since.getTime();
  const until = window.until.getTime();

  let batch: Item[] = [];
  const bulk = new BulkRebuilder();
  const flush = async () => {
    const sent = await sendBatch(deps, webhook, batch, window.failedOnly, summary, signal);
    batch = [];
    if (sent) progress(summary);
  };
  // Read to the head as it was at the start (unfiltered, so the head event is always seen).
  const subscription = deps.events.subscribeToAll({ from: created?.position ?? 'start' });
  try {
    for await (const event of subscription) {
      // The filters in force at this event: the last edit logged before it.
      while (next < configurations.length && comparePositions(configurations[next]!.position, event.position) < 0) {
        filters = { events: configurations[next]!.events!, objects: configurations[next]!.objects! };
        next += 1;
      }
      const time = event.created.getTime();
      const change = time >= since && time < until ? recordChange(event) : null;
      if (change?.workspaceId === webhook.workspaceId) {
        const wanted = matches(filters, change.object, change.kind);
        // A bulk member counts for any kind, as live: all kinds together tell when the action is complete.
        if (isBulk(change) && matches(filters, change.object, 'any')) for (const rebuilt of bulk.add(event, change, wanted)) batch.push(rebuilt);
        else if (!isBulk(change) && wanted) batch.push({ event, change });
      }
      if (batch.length >= BATCH) await flush();
      if (summary.resumeSince !== undefined || comparePositions(event.position, head) >= 0) break;
    }
  } finally {
    await subscription.close();
  }
  if (summary.resumeSince === undefined) {
    for (const rebuilt of bulk.finish()) batch.push(rebuilt);
    await flush();
  }
  return summary;
}

/** A single event, or a rebuilt bulk event. */
type Item = Change | RebuiltBulk;

const eventIdOf = (item: Item) => ('payload' in item ? item.payload.id : item.event.id);
const logTimeOf = (item: Item) => ('payload' in item ? item.firstAt : item.event.created.toISOString());

function matches(filters: Pick<Webhook, 'events' | 'objects'>, object: string, kind: string): boolean {
  return (filters.objects === 'all' || filters.objects.includes(object)) && (kind === 'any' || filters.events === 'all' || (filters.events as string[]).includes(kind));
}

/** A failed event: some delivery failed for good and none was delivered or is still under way. */
function failedEvents(deliveries: Delivery[]): Set<string> {
  const failed = new Set(deliveries.filter((d) => d.status === 'failed').map((d) => d.eventId));
  for (const d of deliveries) if (d.status === 'delivered' || d.status === 'waiting' || d.status === 'retrying') failed.delete(d.eventId);
  return failed;
}

async function sendBatch(deps: RecoverDeps, webhook: Webhook, batch: Item[], failedOnly: boolean, summary: RecoverSummary, signal: AbortSignal): Promise<boolean> {
  if (batch.length === 0) return false;
  let wanted = batch;
  if (failedOnly) {
    const failed = failedEvents(await deps.webhooks.deliveriesOfEvents(webhook.id, batch.map(eventIdOf)));
    wanted = batch.filter((item) => failed.has(eventIdOf(item)));
  }
  if (wanted.length === 0) return false;
  const data = await renderData(deps, wanted.filter((item): item is Change => !('payload' in item)));
  const items = wanted.flatMap((item): { redelivery: Redelivery; logTime: string }[] => {
    const logTime = logTimeOf(item);
    if ('payload' in item) return [{ redelivery: { payload: item.payload, webhookId: webhook.id, cause: 'recover', originalId: null }, logTime }];
    const { event, change } = item;
    const record = data.get(event.id);
    if (record === undefined) {
      summary.skipped += 1;
      return [];
    }
    return [{ redelivery: { payload: singlePayload(event, change, record), webhookId: webhook.id, cause: 'recover', originalId: null }, logTime }];
  });
  for (let start = 0; start < items.length; start += SEND_CHUNK) {
    const chunk = items.slice(start, start + SEND_CHUNK);
    // Stopped between chunks, so that nothing is left stored and unsent.
    if (signal.aborted) {
      summary.resumeSince = chunk[0]!.logTime;
      break;
    }
    const sent = await redeliverNow(deps, webhook, chunk.map(({ redelivery }) => redelivery));
    summary.resent += sent.length;
    summary.notDelivered += sent.filter((delivery) => delivery.status !== 'delivered').length;
  }
  return true;
}

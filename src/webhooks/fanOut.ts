import type { Logger } from 'pino';
import { recordStream, upcast, type RecordDeletedData } from '../events/records.js';
import { renderRecords } from '../../queries/recordFormat.js';
import { todayUtc } from '../schema/dates.js';
import type { EventStore, PersistentEvent, RecordedEvent } from '../eventstore/port.js';
import { comparePositions } from '../eventstore/position.js';
import { RECORDS_PROJECTION, type ReadStore, type RecordDocument } from '../readstore/port.js';
import type { Catalogues } from '../setup/catalogues.js';
import type { User } from '../setup/port.js';
import { runGroup } from './groupRunner.js';
import { createWebhookLogView, type WebhookLogView } from './logView.js';
import { eventName, isBulk, recordChange, type RecordChange } from './policy.js';
import { EVENT_KINDS, WEBHOOKS_FILTER, WEBHOOKS_GROUP, type BulkMember, type EventKind, type WebhookPayload, type WebhookStore } from './port.js';
import { recipientsAt, type TimelineEntry } from './timeline.js';

/**
 * Fan-out: the persistent subscription group `webhooks` -> one delivery per matching webhook and
 * record event, or a bulk member when the event's action changed many records of its object.
 * A batch's deliveries are committed before any of its events is acknowledged, so a crash
 * between the two redelivers events whose deliveries exist, and the store ignores those.
 * Who receives a change is decided by log order (timeline.ts): the group also carries the
 * workspace streams, whose webhook events finish a switch the store missed (logView.ts).
 */

export { WEBHOOKS_GROUP };
/**
 * Events per batch and held at once. The EventStoreDB adapter holds fewer (inFlightLimit), so
 * that what it holds is settled within the server's message timeout; the embedded group has none.
 */
const MAX_BATCH = 500;
const BUFFER_SIZE = 1_000;
const MAX_RETRY_COUNT = 10;
/**
 * How long the fan-out lets events gather after a batch smaller than MAX_BATCH. Under a steady
 * load of writes it handled one or two events per batch, and each batch costs the same few
 * statements (the claim, the workspaces' webhook timelines, the acks) whatever its size. Longer
 * waits saved no more, and a delivery may come this much later (docs/webhook-dispatch.md).
 */
const GATHER_MS = 10;
/** How long to wait for the records projection before looking again (the data comes from it). */
const PROJECTION_WAIT_MS = 5_000;
/** Held events are given back (nack, retried later) rather than held past this. */
const HOLD_LIMIT_MS = 25_000;

export interface FanOutDeps {
  events: EventStore;
  readStore: ReadStore;
  webhooks: WebhookStore;
  listUsers(workspaceId: string): Promise<User[]>;
  /** The fields a payload shows: the workspace's catalogue when it is sent. */
  catalogues: Catalogues;
  logger: Logger;
  clock: () => Date;
  /** Called after new deliveries or bulk members were stored. */
  onStored(): void;
  /** Told of each batch fanned out or failed, for `csr projections status` (its rate and last error). */
  status?: { applied(events: number): void; failed(error: unknown): void };
}

export interface RunningFanOut {
  /** Joined to the consumer group (false while a dropped subscription is being re-made). */
  ready(): boolean;
  stop(): Promise<void>;
}

export interface Change {
  event: RecordedEvent;
  change: RecordChange;
}

/** What rendering an event's record needs (the fan-out, and `csr webhooks recover`). */
export type RenderDeps = Pick<FanOutDeps, 'events' | 'readStore' | 'listUsers' | 'logger' | 'clock' | 'catalogues'>;

export function startFanOut(deps: FanOutDeps): RunningFanOut {
  const logger = deps.logger.child({ component: 'webhook fan-out' });
  const view = createWebhookLogView({ events: deps.events, webhooks: deps.webhooks, logger });
  let stopped = false;
  let parked = 0;

  const handle = async (batch: PersistentEvent[]) => {
    try {
      const stored = await fanOut(deps, view, batch, () => stopped);
      await Promise.all(batch.map((item) => item.ack()));
      deps.status?.applied(batch.length);
      if (stored) deps.onStored();
    } catch (error) {
      if (stopped) return;
      deps.status?.failed(error);
      const reason = error instanceof Error ? error.message : String(error);
      // The store parks an event after MAX_RETRY_COUNT retries; say so, with the running count.
      const parking = batch.filter((item) => item.retryCount >= MAX_RETRY_COUNT).length;
      parked += parking;
      logger.error({ err: error, events: batch.length }, 'fan-out failed; the events will be handed out again after a wait');
      if (parking > 0) logger.error({ parking, parkedSinceStart: parked }, 'webhook events parked after repeated failures; replay them with `csr webhooks replay-parked`');
      await Promise.all(batch.map((item) => item.nack('retry', reason)));
    }
  };
  const runner = runGroup({
    open: () =>
      deps.events.persistentSubscription(WEBHOOKS_GROUP, {
        filter: WEBHOOKS_FILTER,
        maxRetryCount: MAX_RETRY_COUNT,
        bufferSize: BUFFER_SIZE,
      }),
    handle,
    maxBatch: MAX_BATCH,
    gatherMs: GATHER_MS,
    logger,
  });

  return {
    ready: runner.ready,
    async stop() {
      stopped = true;
      await runner.stop();
    },
  };
}

/** Returns whether it stored anything: most events of most workspaces go to no webhook. */
async function fanOut(deps: FanOutDeps, view: WebhookLogView, batch: PersistentEvent[], stopped: () => boolean): Promise<boolean> {
  await view.reconcile(batch.map(({ event }) => event));
  const changes: Change[] = [];
  for (const { event } of batch) {
    const change = recordChange(event);
    if (change) changes.push({ event, change });
  }
  if (changes.length === 0) return false;

  const timelines = await timelinesOf(deps, view, changes);
  // No webhook in any of these workspaces' logs (most POST loads): nothing to decide per event.
  if ([...timelines.values()].every(({ timeline }) => timeline.length === 0)) return false;
  const webhookIdsFor = ({ event, change }: Change, kinds: readonly EventKind[]) => {
    const { timeline, stored } = timelines.get(change.workspaceId) ?? { timeline: [], stored: new Set<string>() };
    return [...new Set(kinds.flatMap((kind) => recipientsAt(timeline, event.position, change.object, kind)))].filter((id) => stored.has(id));
  };
  // A bulk member is kept while any webhook wants its object, whatever the kind: the members of
  // all kinds together tell when the action is complete.
  const members: BulkMember[] = changes.filter((item) => isBulk(item.change) && webhookIdsFor(item, EVENT_KINDS).length > 0).map(bulkMember);
  const wanted = changes
    .filter(({ change }) => !isBulk(change))
    .map((single) => ({ ...single, webhookIds: webhookIdsFor(single, [single.change.kind]) }))
    .filter((single) => single.webhookIds.length > 0);

  if (wanted.some(({ change }) => change.kind !== 'deleted')) await waitForRecords(deps, wanted.map(({ event }) => event), stopped);
  const data = await renderData(deps, wanted);
  const items = wanted.flatMap(({ event, change, webhookIds }) => {
    const record = data.get(event.id);
    return record === undefined ? [] : [{ payload: singlePayload(event, change, record), webhookIds }];
  });
  if (members.length > 0) await deps.webhooks.addBulkMembers(members);
  if (items.length > 0) await deps.webhooks.enqueue(items, deps.clock().toISOString());
  return members.length > 0 || items.length > 0;
}

function bulkMember({ event, change }: Change): BulkMember {
  return {
    eventId: event.id,
    workspaceId: change.workspaceId,
    actionId: change.actionId,
    object: change.object,
    kind: change.kind,
    recordId: change.recordId,
    source: change.source,
    occurredAt: event.created.toISOString(),
    position: event.position,
    actionCount: change.actionCount,
  };
}

export function singlePayload(event: RecordedEvent, change: RecordChange, data: unknown): WebhookPayload {
  return {
    id: event.id,
    workspaceId: change.workspaceId,
    event: eventName(change.object, change.kind),
    object: change.object,
    source: change.source,
    occurredAt: event.created.toISOString(),
    data,
  };
}

/**
 * Read after the batch was handed out, so each timeline holds every configuration change before
 * its events. Only webhooks the store has are sent to (a creation whose store write failed after
 * its event was logged has no webhook to send to).
 */
async function timelinesOf(deps: FanOutDeps, view: WebhookLogView, changes: Change[]): Promise<Map<string, { timeline: TimelineEntry[]; stored: Set<string> }>> {
  const workspaces = new Set(changes.map(({ change }) => change.workspaceId));
  const entries = await Promise.all(
    [...workspaces].map(async (id) => {
      const timeline = await view.timeline(id);
      // A workspace whose log names no webhook (most of them) sends nothing: its store is not asked.
      const stored = timeline.length === 0 ? [] : await deps.webhooks.listWebhooks(id);
      return [id, { timeline, stored: new Set(stored.map((webhook) => webhook.id)) }] as const;
    }),
  );
  return new Map(entries);
}

/** Created and updated events carry the record as the read model shows it, so it must have caught up. */
async function waitForRecords(deps: FanOutDeps, events: RecordedEvent[], stopped: () => boolean): Promise<void> {
  const newest = events.map((event) => event.position).reduce((a, b) => (comparePositions(a, b) >= 0 ? a : b));
  const giveUpAt = Date.now() + HOLD_LIMIT_MS;
  while (!(await deps.readStore.waitForCheckpoint(RECORDS_PROJECTION, newest, PROJECTION_WAIT_MS))) {
    if (stopped()) throw new Error('stopped while waiting for the records projection');
    if (Date.now() >= giveUpAt) throw new Error('the records projection is behind; the events are given back and retried');
    deps.logger.warn({ position: newest }, 'webhooks wait for the records projection to catch up (is a projector running?)');
  }
}

/**
 * The REST form of each event's record (spec 6.3): as it is now for created and updated events,
 * as last saved for deleted ones, and as last saved too when the record was deleted since.
 * Webhooks show every link in full; the change feed passes its key's `canAccess` (spec 5.8).
 */
export async function renderData(deps: RenderDeps, changes: Change[], canAccess: (object: string) => boolean = () => true): Promise<Map<string, unknown>> {
  const data = new Map<string, unknown>();
  const byObject = new Map<string, Change[]>();
  for (const item of changes) {
    const key = `${item.change.workspaceId}/${item.change.object}`;
    byObject.set(key, [...(byObject.get(key) ?? []), item]);
  }
  const today = todayUtc(deps.clock());
  for (const group of byObject.values()) {
    const { workspaceId, object: objectKey } = group[0]!.change;
    const object = (await deps.catalogues.get(workspaceId)).object(objectKey) ?? (await deps.catalogues.refresh(workspaceId)).object(objectKey);
    if (!object) continue;
    const live = await deps.readStore.getMany(workspaceId, objectKey, group.filter(({ change }) => change.kind !== 'deleted').map(({ change }) => change.recordId));
    const current = new Map(live.map((document) => [document.id, document]));
    const documents: RecordDocument[] = [];
    const sources: string[] = [];
    for (const { event, change } of group) {
      const document = change.kind === 'deleted' ? lastSaved(event) : current.get(change.recordId) ?? (await deletedSince(deps.events, change.recordId));
      if (!document) {
        deps.logger.warn({ eventId: event.id, recordId: change.recordId }, 'record not found for a webhook event; not sent');
        continue;
      }
      documents.push(document);
      sources.push(event.id);
    }
    const rendered = await renderRecords(object, documents, { workspaceId, readStore: deps.readStore, listUsers: deps.listUsers, canAccess, today });
    rendered.forEach((record, index) => data.set(sources[index]!, record));
  }
  return data;
}

function lastSaved(event: RecordedEvent): RecordDocument | null {
  const recordEvent = upcast(event);
  if (recordEvent?.type !== 'RecordDeleted') return null;
  return documentOf(recordEvent.data, event);
}

function documentOf(data: RecordDeletedData, event: RecordedEvent): RecordDocument {
  return {
    workspaceId: data.workspaceId,
    object: data.object,
    id: data.recordId,
    name: null,
    fields: data.fields,
    calculated: data.calculated,
    createdAt: data.createdAt,
    updatedAt: data.updatedAt,
    createdPosition: event.position,
    revision: event.revision,
  };
}

async function deletedSince(events: EventStore, recordId: string): Promise<RecordDocument | null> {
  const [last] = await events.readStream(recordStream(recordId), { direction: 'backwards', maxCount: 1 });
  return last ? lastSaved(last) : null;
}

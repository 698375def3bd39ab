import type { Logger } from 'pino';
import { bulkChunksDue, bulkPayload, wants, type BulkChunk } from './policy.js';
import type { BulkGroup, WebhookStore } from './port.js';

/**
 * Turns stored bulk members into `<object>.<kind>.bulk` events (spec 6.2, PRODUCT.md): each
 * chunk of at most 500 ids becomes one event with its own id (policy.ts `bulkPayload`), enqueued to the webhooks that want it
 * at that moment, in the same transaction that marks its members as sent.
 */

/** A group that has had no new member for this long is sent even if the action looks incomplete. */
const QUIET_MS = 1_000;

export interface BulkFlusher {
  /** Sends the chunks that are due; returns how many events were made. */
  flush(): Promise<number>;
}

export function createBulkFlusher(deps: { webhooks: WebhookStore; logger: Logger; clock: () => Date }): BulkFlusher {
  // When each group last grew, as seen by this process; a group first seen now counts as grown now.
  const lastGrowth = new Map<string, { size: number; at: number }>();
  const key = (group: BulkGroup) => `${group.actionId}/${group.object}/${group.kind}`;

  const lastAddedAt = (group: BulkGroup, now: number): number => {
    const seen = lastGrowth.get(key(group));
    if (seen && seen.size === group.members.length) return seen.at;
    lastGrowth.set(key(group), { size: group.members.length, at: now });
    return now;
  };

  const send = async (chunk: BulkChunk, at: Date): Promise<void> => {
    const { group, members } = chunk;
    const webhookIds = (await deps.webhooks.listWebhooks(group.workspaceId)).filter((w) => wants(w, group.object, group.kind)).map((w) => w.id);
    const payload = bulkPayload(group, members);
    await deps.webhooks.flushBulk(members.map((member) => member.eventId), payload, webhookIds, at.toISOString());
  };

  return {
    async flush() {
      const groups = await deps.webhooks.bulkGroups();
      const now = deps.clock();
      const live = new Set(groups.map(key));
      for (const name of lastGrowth.keys()) if (!live.has(name)) lastGrowth.delete(name);
      const chunks = bulkChunksDue(groups, now.getTime(), QUIET_MS, (group) => lastAddedAt(group, now.getTime()));
      for (const chunk of chunks) await send(chunk, now);
      if (chunks.length > 0) deps.logger.debug({ events: chunks.length }, 'bulk webhook events made');
      return chunks.length;
    },
  };
}

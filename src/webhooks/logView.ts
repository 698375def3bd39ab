import type { Logger } from 'pino';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import { workspaceStream } from '../events/workspace.js';
import type { WebhookStore } from './port.js';
import { latestState, timelineEntry, timelineOf, type TimelineEntry } from './timeline.js';

/**
 * The fan-out's view of webhook configuration, read from the log. A timeline is read after the
 * record events it judges were handed out, so it holds every configuration change committed
 * before them; it is cached per workspace, and only what the stream gained since is read.
 */
export interface WebhookLogView {
  timeline(workspaceId: string): Promise<TimelineEntry[]>;
  /**
   * Brings the store's on/off flag in line with the log for the webhooks these setup events name.
   * The log is written first, so a crash between the two leaves the store behind; the fan-out
   * sees the event in its subscription and finishes the change (skipping what was waiting).
   */
  reconcile(events: RecordedEvent[]): Promise<void>;
}

export function createWebhookLogView(deps: { events: EventStore; webhooks: WebhookStore; logger: Logger }): WebhookLogView {
  const cache = new Map<string, { revision: number; timeline: TimelineEntry[] }>();

  // Asked on every batch: only what the stream gained since the last read is read (most often
  // nothing, so no event is parsed or opened). The stream is append-only, so the entries kept stay
  // in log order with the new ones after them.
  const timeline = async (workspaceId: string): Promise<TimelineEntry[]> => {
    const cached = cache.get(workspaceId);
    const added = await deps.events.readStream(workspaceStream(workspaceId), { fromRevision: (cached?.revision ?? -1) + 1 });
    const last = added[added.length - 1];
    if (!last) return cached?.timeline ?? [];
    const fresh = { revision: last.revision, timeline: [...(cached?.timeline ?? []), ...timelineOf(added)] };
    cache.set(workspaceId, fresh);
    return fresh.timeline;
  };

  return {
    timeline,
    async reconcile(events) {
      const named = new Map<string, string>();
      for (const event of events) {
        const entry = timelineEntry(event);
        if (entry) named.set(entry.webhookId, String(event.data.workspaceId));
      }
      for (const [webhookId, workspaceId] of named) {
        const logged = latestState(await timeline(workspaceId), webhookId);
        const stored = await deps.webhooks.webhookById(webhookId);
        if (!logged || !stored || stored.enabled === logged.enabled) continue;
        await deps.webhooks.setEnabled(webhookId, logged.enabled, logged.reason);
        deps.logger.warn({ webhookId, enabled: logged.enabled }, 'webhook switch finished from the log (the process that made it stopped half way)');
      }
    },
  };
}

import type { Logger } from 'pino';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import { workspaceStream } from '../setup/audit.js';
import type { WebhookStore } from './port.js';
import { latestState, timelineEntry, timelineOf, type TimelineEntry } from './timeline.js';

/**
 * The fan-out's view of webhook configuration, read from the log. A timeline is read after the
 * record events it judges were handed out, so it holds every configuration change committed
 * before them; it is cached per workspace and read again only when the stream has grown.
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

  const timeline = async (workspaceId: string): Promise<TimelineEntry[]> => {
    const stream = workspaceStream(workspaceId);
    const [last] = await deps.events.readStream(stream, { direction: 'backwards', maxCount: 1 });
    const cached = cache.get(workspaceId);
    if (!last) return [];
    if (cached && cached.revision === last.revision) return cached.timeline;
    const fresh = { revision: last.revision, timeline: timelineOf(await deps.events.readStream(stream)) };
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

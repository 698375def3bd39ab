import type { RecordedEvent } from '../eventstore/port.js';
import { BULK_MAX_IDS, bulkPayload, type RecordChange } from './policy.js';
import { EVENT_KINDS, type BulkGroup, type WebhookPayload } from './port.js';

/**
 * `csr webhooks recover` rebuilds bulk events from the log as the live flusher made them
 * (bulkFlusher.ts): the members of one (action, object, kind) in log order, in chunks of at most
 * 500 ids; a full chunk as soon as it is full, the rest once every record of the action's object
 * has been seen (all kinds count, as live), each kind in turn. Members of kinds the webhook does not
 * take still count towards completeness, as live. What the window cuts off goes out at its end.
 * The payloads are bulkPayload's, so a rebuilt event has the id it was first sent with.
 */

/** A rebuilt bulk event, and the log time of its first member (where a resumed recover starts it again). */
export interface RebuiltBulk {
  payload: WebhookPayload;
  firstAt: string;
}

type Group = Pick<BulkGroup, 'workspaceId' | 'actionId' | 'object' | 'kind' | 'source' | 'members'>;

export class BulkRebuilder {
  private readonly groups = new Map<string, Group>();
  /** Members of (action, object) seen so far, all kinds. */
  private readonly seen = new Map<string, number>();

  /** Adds a bulk member; answers the bulk events complete with it, in the order they are sent. */
  add(event: RecordedEvent, change: RecordChange, wanted: boolean): RebuiltBulk[] {
    const objectKey = `${change.actionId}/${change.object}`;
    const seen = (this.seen.get(objectKey) ?? 0) + 1;
    this.seen.set(objectKey, seen);
    const ready: RebuiltBulk[] = [];
    if (wanted) {
      const key = `${objectKey}/${change.kind}`;
      let group = this.groups.get(key);
      if (!group) this.groups.set(key, (group = { workspaceId: change.workspaceId, actionId: change.actionId, object: change.object, kind: change.kind, source: change.source, members: [] }));
      group.members.push({ eventId: event.id, recordId: change.recordId, occurredAt: event.created.toISOString() });
      if (group.members.length === BULK_MAX_IDS) ready.push(this.take(key));
    }
    if (seen >= change.actionCount) {
      this.seen.delete(objectKey);
      for (const kind of EVENT_KINDS) if (this.groups.has(`${objectKey}/${kind}`)) ready.push(this.take(`${objectKey}/${kind}`));
    }
    return ready;
  }

  /** The chunks left when the window ends (their actions run past it). */
  finish(): RebuiltBulk[] {
    return [...this.groups.keys()].map((key) => this.take(key));
  }

  private take(key: string): RebuiltBulk {
    const group = this.groups.get(key)!;
    this.groups.delete(key);
    return { payload: bulkPayload(group, group.members), firstAt: group.members[0]!.occurredAt };
  }
}

import type { Filter } from 'mongodb';
import { groupPendingMembers } from '../bulkGroups.js';
import type { BulkGroup, BulkMember } from '../port.js';
import type { BulkMemberDoc } from './mapping.js';

/** The pure half of the MongoDB webhook store for bulk members: documents, filters, grouping. */

export function memberToDoc(member: BulkMember): BulkMemberDoc {
  return {
    _id: member.eventId,
    workspaceId: member.workspaceId,
    actionId: member.actionId,
    object: member.object,
    kind: member.kind,
    recordId: member.recordId,
    source: member.source,
    occurredAt: member.occurredAt,
    position: member.position,
    actionCount: member.actionCount,
    bulkId: null,
  };
}

export const PENDING_FILTER: Filter<BulkMemberDoc> = { bulkId: null };
/** Group and log order (served by the `pending` index). */
export const PENDING_SORT = { actionId: 1, object: 1, kind: 1, position: 1 } as const;

/** Counts the stored members (flushed or not) of each (action, object) of the given actions. */
export function seenForObjectPipeline(actionIds: string[]): object[] {
  return [{ $match: { actionId: { $in: actionIds } } }, { $group: { _id: { actionId: '$actionId', object: '$object' }, count: { $sum: 1 } } }];
}

export function seenKey(actionId: string, object: string): string {
  return JSON.stringify([actionId, object]);
}

/** Pending member documents in PENDING_SORT order -> one group per (action, object, kind). */
export function groupMemberDocs(docs: BulkMemberDoc[], seenForObject: (actionId: string, object: string) => number): BulkGroup[] {
  return groupPendingMembers(
    docs.map((doc) => ({
      eventId: doc._id,
      workspaceId: doc.workspaceId,
      actionId: doc.actionId,
      object: doc.object,
      kind: doc.kind,
      recordId: doc.recordId,
      source: doc.source,
      occurredAt: doc.occurredAt,
      actionCount: doc.actionCount,
      seenForObject: seenForObject(doc.actionId, doc.object),
    })),
  );
}

/** Marks members as sent in `bulkId`; only pending ones match, so a member is flushed once. */
export function markMembersFilter(eventIds: string[]): Filter<BulkMemberDoc> {
  return { _id: { $in: [...eventIds] }, bulkId: null };
}

/** Flushed members whose event is older than the cut-off (pending ones are kept). */
export function purgeMembersFilter(before: string): Filter<BulkMemberDoc> {
  return { bulkId: { $ne: null }, occurredAt: { $lt: before } };
}

import type { BulkGroup } from './port.js';

/** A pending bulk member as a delivery store reads it: the member with what its group carries. */
export type PendingMember = Omit<BulkGroup, 'members'> & BulkGroup['members'][number];

/**
 * Pending members read in (action, object, kind, position) order -> one group per (action, object,
 * kind), members in log order. Every delivery store groups the same way (the bulk flusher relies
 * on it), so the rule is kept here and each adapter only reads its rows.
 */
export function groupPendingMembers(pending: PendingMember[]): BulkGroup[] {
  const groups: BulkGroup[] = [];
  let current: BulkGroup | undefined;
  for (const { eventId, recordId, occurredAt, ...group } of pending) {
    if (!current || current.actionId !== group.actionId || current.object !== group.object || current.kind !== group.kind) {
      current = { ...group, members: [] };
      groups.push(current);
    }
    current.members.push({ eventId, recordId, occurredAt });
  }
  return groups;
}

import type { DeliveryStats, DeliveryStatus } from '../port.js';

/** MongoDB's `$group` by status, the in-flight count and the oldest pending creation time -> DeliveryStats. */
export function toDeliveryStats(groups: { _id: string; n: number }[], inFlight: number, oldestPendingAt: string | null): DeliveryStats {
  const byStatus: Record<DeliveryStatus, number> = { waiting: 0, retrying: 0, delivered: 0, failed: 0, skipped: 0 };
  for (const group of groups) if (Object.hasOwn(byStatus, group._id)) byStatus[group._id as DeliveryStatus] = group.n;
  return { byStatus, inFlight, retrying: byStatus.retrying, oldestPendingAt };
}

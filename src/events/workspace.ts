/**
 * A workspace's own stream: its Setup changes and schema events (the audit trail of who changed
 * a key, a webhook or an object). Named here, beside the record streams, because the write side,
 * the catalogues, the audit export and webhook tools all read or write it.
 */
export function workspaceStream(workspaceId: string): string {
  return `workspace-${workspaceId}`;
}

import type { WebhookPayload } from './port.js';

/**
 * A stored webhook payload as a row, the same in every delivery store's table (its data kept as
 * the JSON text that was rendered), and its port value. The SQLite and PostgreSQL stores share it.
 */
export interface PayloadRow {
  id: string;
  workspace_id: string;
  event: string;
  object: string | null;
  source: string;
  occurred_at: string;
  data: string;
}

export function toPayload(row: PayloadRow): WebhookPayload {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    event: row.event,
    object: row.object,
    source: row.source,
    occurredAt: row.occurred_at,
    data: JSON.parse(row.data) as unknown,
  };
}

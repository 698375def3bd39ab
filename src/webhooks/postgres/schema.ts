/**
 * The tables of the PostgreSQL webhook store. Times are the port's ISO strings in the C collation
 * (they compare in time order as text, whatever the database's locale); payload data is kept as
 * the JSON text it was given, so that a delivery sends exactly the bytes' order it was enqueued
 * with (jsonb would reorder the keys).
 */
export const WEBHOOK_MIGRATION = {
  component: 'WebhookStore',
  steps: [
    `CREATE TABLE csr_webhooks (
       id                   text COLLATE "C" PRIMARY KEY,
       workspace_id         text NOT NULL,
       name                 text NOT NULL,
       url                  text NOT NULL,
       events               jsonb NOT NULL,
       objects              jsonb NOT NULL,
       enabled              boolean NOT NULL,
       disabled_reason      text,
       secret               text NOT NULL,
       created_at           text COLLATE "C" NOT NULL,
       consecutive_failures integer NOT NULL DEFAULT 0,
       last_success_at      text COLLATE "C",
       listener             boolean NOT NULL DEFAULT false
     )`,
    'CREATE INDEX csr_webhooks_by_workspace ON csr_webhooks (workspace_id, created_at, id)',
    `CREATE TABLE csr_webhook_payloads (
       id           text PRIMARY KEY,
       workspace_id text NOT NULL,
       event        text NOT NULL,
       object       text,
       source       text NOT NULL,
       occurred_at  text NOT NULL,
       data         text NOT NULL
     )`,
    'CREATE INDEX csr_webhook_payloads_by_workspace ON csr_webhook_payloads (workspace_id)',
    `CREATE TABLE csr_deliveries (
       id              bigserial PRIMARY KEY,
       webhook_id      text NOT NULL,
       event_id        text NOT NULL,
       event           text NOT NULL,
       status          text NOT NULL,
       response_code   integer,
       attempts        integer NOT NULL DEFAULT 0,
       error           text,
       created_at      text COLLATE "C" NOT NULL,
       last_attempt_at text COLLATE "C",
       next_attempt_at text COLLATE "C",
       claimed_until   text COLLATE "C",
       cause           text,
       original_id     bigint,
       last_sent_at    text,
       last_signature  text
     )`,
    // The fan-out makes one delivery per (webhook, event); resends and recoveries are new rows.
    'CREATE UNIQUE INDEX csr_deliveries_fan_out ON csr_deliveries (webhook_id, event_id) WHERE cause IS NULL',
    "CREATE INDEX csr_deliveries_due ON csr_deliveries (webhook_id, next_attempt_at, id) WHERE status IN ('waiting', 'retrying')",
    'CREATE INDEX csr_deliveries_by_webhook ON csr_deliveries (webhook_id, id)',
    'CREATE INDEX csr_deliveries_by_age ON csr_deliveries (created_at)',
    'CREATE INDEX csr_deliveries_by_event ON csr_deliveries (event_id)',
    `CREATE TABLE csr_bulk_members (
       event_id     text PRIMARY KEY,
       workspace_id text NOT NULL,
       action_id    text NOT NULL,
       object       text NOT NULL,
       kind         text NOT NULL,
       record_id    text NOT NULL,
       source       text NOT NULL,
       occurred_at  text COLLATE "C" NOT NULL,
       position     text COLLATE "C" NOT NULL,
       action_count integer NOT NULL,
       bulk_id      text
     )`,
    'CREATE INDEX csr_bulk_members_pending ON csr_bulk_members (action_id, object, kind, position) WHERE bulk_id IS NULL',
    'CREATE INDEX csr_bulk_members_by_action ON csr_bulk_members (action_id, object)',
  ],
};

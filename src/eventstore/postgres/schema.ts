import type { Migration } from '../../postgres/migrate.js';
import { GENESIS } from '../chain.js';

/**
 * The event log's tables on PostgreSQL (versioned steps, src/postgres/migrate.ts).
 *
 * - `csr_events`: one row per event; `seq` is the global position, assigned by the appender under
 *   the head row's lock (not a sequence: sequence values commit out of order, see appender.ts).
 *   Data and metadata are `json`, which keeps the very text written (the canonical JSON the hash
 *   covers), so the chain check hashes it without parsing. `stream` sorts bytewise (COLLATE "C"),
 *   the order readStreams pages in, whatever the database's collation.
 * - `csr_event_head`: one row, the log's head: the last seq, the hash the next event chains on and
 *   the last commit time (commit times never go backwards along the log).
 * - `csr_groups` / `csr_group_events`: persistent subscription groups (groups.ts).
 */
export const EVENTS_MIGRATION: Migration = {
  component: 'events',
  steps: [
    `CREATE TABLE csr_events (
       seq        bigint  PRIMARY KEY,
       id         text    NOT NULL UNIQUE,
       stream     text    COLLATE "C" NOT NULL,
       revision   integer NOT NULL,
       type       text    NOT NULL,
       created_ms bigint  NOT NULL,
       data       json    NOT NULL,
       metadata   json    NOT NULL,
       UNIQUE (stream, revision)
     );
     CREATE TABLE csr_event_head (
       one        boolean PRIMARY KEY DEFAULT true CHECK (one),
       seq        bigint  NOT NULL,
       hash       text    NOT NULL,
       created_ms bigint  NOT NULL
     );
     INSERT INTO csr_event_head (seq, hash, created_ms) VALUES (0, '${GENESIS}', 0);
     CREATE TABLE csr_groups (
       name   text   PRIMARY KEY,
       cursor bigint NOT NULL
     );
     CREATE TABLE csr_group_events (
       grp           text        NOT NULL,
       seq           bigint      NOT NULL,
       retry_count   integer     NOT NULL DEFAULT 0,
       parked        boolean     NOT NULL DEFAULT false,
       reason        text,
       due_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
       claimed_by    text,
       claimed_until timestamptz,
       PRIMARY KEY (grp, seq)
     );`,
  ],
};

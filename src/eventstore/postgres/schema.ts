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
 * - `csr_claims` (step 2): the claim streams (port.ts CLAIM_STREAM_PREFIXES), written in the same
 *   transactions as the log but outside its order, its chain and its readers, with one index. The
 *   step copies the claims the log already holds (the log keeps its rows), and a trigger copies
 *   every claim a process of the previous version still appends to the log: the table's primary
 *   key then refuses a claim taken by either version, so an upgrade with both running never
 *   hands one value out twice.
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
    // The trigger comes before the copy: it locks the log against appends until this step commits.
    // The prefixes are port.ts CLAIM_STREAM_PREFIXES written out: a released step never changes.
    `CREATE TABLE csr_claims (
       stream     text    COLLATE "C" NOT NULL,
       revision   integer NOT NULL,
       id         text    NOT NULL,
       type       text    NOT NULL,
       created_ms bigint  NOT NULL,
       data       json    NOT NULL,
       metadata   json    NOT NULL,
       PRIMARY KEY (stream, revision)
     );
     CREATE FUNCTION csr_claim_from_log() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       INSERT INTO csr_claims (stream, revision, id, type, created_ms, data, metadata)
       VALUES (NEW.stream, NEW.revision, NEW.id, NEW.type, NEW.created_ms, NEW.data, NEW.metadata);
       RETURN NULL;
     END $$;
     CREATE TRIGGER csr_claims_from_log AFTER INSERT ON csr_events FOR EACH ROW
       WHEN (NEW.stream ^@ 'reservation-' OR NEW.stream ^@ 'autonumber-') EXECUTE FUNCTION csr_claim_from_log();
     INSERT INTO csr_claims (stream, revision, id, type, created_ms, data, metadata)
       SELECT stream, revision, id, type, created_ms, data, metadata FROM csr_events
       WHERE stream ^@ 'reservation-' OR stream ^@ 'autonumber-';`,
  ],
};

/**
 * The tables of the PostgreSQL read store.
 *
 * Records and their filter keys are tables partitioned by generation (blue/green rebuilds): the
 * live generation and the one being built are partitions side by side (`csr_records_g<N>`), a
 * promotion is one update of the pointer row (`csr_read_model`), and dropping an old generation
 * drops its partitions. Every read names the generation through the pointer in the same statement,
 * so it sees one consistent generation, and the server prunes the other partitions at run time.
 * Every index starts with workspace_id (after nothing but the partition), as the architecture asks.
 *
 * `csr_record_keys` holds one row per (record, normalised filter value): the JSON text of the pair
 * [field, filterKey(value)], as the MongoDB adapter's `filterKeys`, so a list of links contributes
 * one row per element. Its primary key (workspace, object, key, creation position, id) serves
 * "equal on a field, in creation order" as an ordered index range; further filters are checked
 * against the same index by exact key.
 *
 * A generation being built keeps its filter keys apart until its promotion (`stagedKeys.ts`): one
 * row per record in a plain table of its own (`csr_record_keys_staged_g<N>`, the record's keys as an
 * array), and no partition of `csr_record_keys` yet. The keys are written in one sorted statement
 * into a plain table, counted, and attached as the generation's partition (the attach builds its
 * indexes) once the rebuild has caught up; the live generation's writes never take that path.
 *
 * `csr_record_counts` keeps, per generation, object and key, how many rows `csr_record_keys` holds
 * (the matches of a list filtered on that one key), and under the key '' how many records the
 * object has: a list's `total` is then one row, where counting the matches of a filter cost more
 * server time than the page itself (docs/performance.md). Triggers on the two tables keep
 * them, one statement per writing statement (transition tables, summed per key), so every writer
 * keeps them in step, including a projector of the previous version still running while a newer
 * one upgrades the schema (the step below waits for its open transaction, then counts).
 *
 * Text that is compared for order (positions, ids) is in the C collation, so the order is the
 * same on every server whatever its locale.
 */

/** The pointer row of the read model, one for the whole store. */
export const POINTER_ID = 'records';

export const READ_MIGRATION = {
  component: 'ReadStore',
  steps: [
    `CREATE TABLE csr_records (
       generation       integer NOT NULL,
       workspace_id     text COLLATE "C" NOT NULL,
       object           text COLLATE "C" NOT NULL,
       id               text COLLATE "C" NOT NULL,
       name             text,
       name_key         text COLLATE "C",
       fields           jsonb NOT NULL,
       calculated       jsonb NOT NULL,
       created_at       text NOT NULL,
       updated_at       text NOT NULL,
       updated_ms       bigint NOT NULL,
       created_position text COLLATE "C" NOT NULL,
       revision         integer NOT NULL,
       rendered         text,
       escaped          boolean NOT NULL,
       PRIMARY KEY (workspace_id, object, id, generation)
     ) PARTITION BY LIST (generation)`,
    'CREATE INDEX csr_records_by_creation ON csr_records (workspace_id, object, created_position, id)',
    'CREATE INDEX csr_records_by_name ON csr_records (workspace_id, object, name_key, created_position, id)',
    'CREATE INDEX csr_records_by_updated ON csr_records (workspace_id, object, updated_ms)',
    `CREATE TABLE csr_record_keys (
       generation       integer NOT NULL,
       workspace_id     text COLLATE "C" NOT NULL,
       object           text COLLATE "C" NOT NULL,
       key              text COLLATE "C" NOT NULL,
       created_position text COLLATE "C" NOT NULL,
       id               text COLLATE "C" NOT NULL,
       PRIMARY KEY (workspace_id, object, key, created_position, id, generation)
     ) PARTITION BY LIST (generation)`,
    // A put replaces the record's keys: they are found by record.
    'CREATE INDEX csr_record_keys_by_record ON csr_record_keys (workspace_id, object, id)',
    'CREATE TABLE csr_records_g1 PARTITION OF csr_records FOR VALUES IN (1)',
    'CREATE TABLE csr_record_keys_g1 PARTITION OF csr_record_keys FOR VALUES IN (1)',
    `CREATE TABLE csr_read_model (
       id                  text PRIMARY KEY,
       live                integer NOT NULL,
       live_version        text,
       building            integer,
       building_version    text,
       building_position   text COLLATE "C",
       building_owner      text,
       building_started_at text
     )`,
    `INSERT INTO csr_read_model (id, live) VALUES ('${POINTER_ID}', 1)`,
    'CREATE TABLE csr_checkpoints (projection text PRIMARY KEY, position text COLLATE "C" NOT NULL)',
    `CREATE TABLE csr_link_edges (
       workspace_id text COLLATE "C" NOT NULL,
       target       text COLLATE "C" NOT NULL,
       object       text COLLATE "C" NOT NULL,
       field        text COLLATE "C" NOT NULL,
       id           text COLLATE "C" NOT NULL,
       PRIMARY KEY (workspace_id, target, object, field, id)
     )`,
    'CREATE TABLE csr_runner_status (name text PRIMARY KEY, status jsonb NOT NULL)',
    // The kept counts (see above): the table, a partition for every generation that has one, the
    // triggers, then the counts of what the generations already hold. The triggers' creation waits
    // for any open writing transaction and holds the next ones until this step commits, so no row
    // is counted twice or missed.
    `CREATE TABLE csr_record_counts (
       generation   integer NOT NULL,
       workspace_id text COLLATE "C" NOT NULL,
       object       text COLLATE "C" NOT NULL,
       key          text COLLATE "C" NOT NULL,
       n            bigint NOT NULL,
       PRIMARY KEY (workspace_id, object, key, generation)
     ) PARTITION BY LIST (generation)`,
    `DO $$
     DECLARE g integer;
     BEGIN
       FOR g IN SELECT substring(c.relname FROM '^csr_records_g([1-9][0-9]*)$')::integer FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'csr_records'::regclass AND c.relname ~ '^csr_records_g[1-9][0-9]*$' LOOP
         EXECUTE format('CREATE TABLE csr_record_counts_g%s PARTITION OF csr_record_counts FOR VALUES IN (%s)', g, g);
       END LOOP;
     END $$`,
    `CREATE FUNCTION csr_count_keys() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       INSERT INTO csr_record_counts AS c (generation, workspace_id, object, key, n)
       SELECT generation, workspace_id, object, key, CASE TG_OP WHEN 'INSERT' THEN count(*) ELSE -count(*) END FROM changed GROUP BY 1, 2, 3, 4
       ON CONFLICT (workspace_id, object, key, generation) DO UPDATE SET n = c.n + EXCLUDED.n;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION csr_count_records() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       INSERT INTO csr_record_counts AS c (generation, workspace_id, object, key, n)
       SELECT generation, workspace_id, object, '', CASE TG_OP WHEN 'INSERT' THEN count(*) ELSE -count(*) END FROM changed GROUP BY 1, 2, 3
       ON CONFLICT (workspace_id, object, key, generation) DO UPDATE SET n = c.n + EXCLUDED.n;
       RETURN NULL;
     END $$`,
    'CREATE TRIGGER csr_record_keys_added AFTER INSERT ON csr_record_keys REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION csr_count_keys()',
    'CREATE TRIGGER csr_record_keys_removed AFTER DELETE ON csr_record_keys REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION csr_count_keys()',
    'CREATE TRIGGER csr_records_added AFTER INSERT ON csr_records REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION csr_count_records()',
    'CREATE TRIGGER csr_records_removed AFTER DELETE ON csr_records REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION csr_count_records()',
    `INSERT INTO csr_record_counts (generation, workspace_id, object, key, n)
     SELECT generation, workspace_id, object, key, count(*) FROM csr_record_keys GROUP BY 1, 2, 3, 4
     UNION ALL
     SELECT generation, workspace_id, object, '', count(*) FROM csr_records GROUP BY 1, 2, 3`,
  ],
};

/** The key of csr_record_counts under which an object's records are counted (a filter key is a JSON array). */
export const ALL_RECORDS_KEY = '';

/** The partitions of generation `n` (an integer the store made, never input), and the table its keys are staged in while it is built. */
export function partitionsOf(generation: number): { records: string; keys: string; counts: string; staged: string } {
  if (!Number.isSafeInteger(generation) || generation < 1) throw new Error(`not a generation: ${generation}`);
  return {
    records: `csr_records_g${generation}`,
    keys: `csr_record_keys_g${generation}`,
    counts: `csr_record_counts_g${generation}`,
    staged: `csr_record_keys_staged_g${generation}`,
  };
}

/** The generation a partition of csr_records holds, or null for another table. */
export function generationOfPartition(name: string): number | null {
  const match = /^csr_records_g([1-9]\d*)$/.exec(name);
  return match ? Number(match[1]) : null;
}

/** The live generation, read in the statement that uses it. */
export const LIVE = `(SELECT live FROM csr_read_model WHERE id = '${POINTER_ID}')`;

/** The channel a checkpoint's commit is announced on (payload: JSON [projection, position]). */
export const CHECKPOINT_CHANNEL = 'csr_checkpoints';

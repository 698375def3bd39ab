import type Database from 'better-sqlite3';
import { CLAIM_STREAM_PREFIXES, type EventFilter, type EventMetadata, type NewEvent, type RecordedEvent, type StreamEvent } from '../port.js';
import { canonicalJson, canonicalMetadataOnce, chainHashOfJson, GENESIS, storedMetadataJson } from '../chain.js';
import type { StoredText } from '../chainCheck.js';
import { formatPosition, type Position } from '../position.js';
import { applySchema, BOUND_COUNT, BOUND_VALUE, changeSchema, openSqliteFile } from '../../sqlite/file.js';

/**
 * The events table: one row per event, `seq` (INTEGER autoincrement) is the global position and
 * `created` the commit time in milliseconds. Everything else in the embedded event store reads and
 * writes the log through this class.
 */

// UNIQUE (stream, revision) doubles as the index on stream (its leftmost column); a separate one
// would only cost writes.
const EVENTS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    id       TEXT    NOT NULL UNIQUE,
    stream   TEXT    NOT NULL,
    revision INTEGER NOT NULL,
    type     TEXT    NOT NULL,
    created  INTEGER NOT NULL,
    data     TEXT    NOT NULL,
    metadata TEXT    NOT NULL,
    UNIQUE (stream, revision)
  );
`;

/**
 * What the claims index keeps of a claim stream's name: a reservation stream's last 16 characters
 * (64 bits of the digest that ends its name, commands/reservations/keys.ts), any other claim stream
 * (an auto-number counter, one per workspace and object) whole. The whole name made every index
 * entry about 100 bytes at a random place (the digest), so each claim dirtied a page of an index
 * that grew with the store (docs/performance.md, "the claims index"). Every lookup also compares
 * the whole name, so two names with one key only cost a step more; the index is not UNIQUE, and
 * the writer checks a claim stream's revision before it appends (groupCommitter.ts), under the
 * write lock that makes the check and the insert one step.
 */
export function claimKey(name: string): string {
  const prefix = CLAIM_STREAM_PREFIXES[0];
  return `CASE WHEN substr(${name}, 1, ${prefix.length}) = '${prefix}' THEN substr(${name}, -16) ELSE ${name} END`;
}

/**
 * Claim streams (port.ts CLAIM_STREAM_PREFIXES) beside the log: written in the same transactions,
 * but outside the log's order, its chain and its readers, and with one index instead of three. Rows
 * go to the end of the table (rowid) and only the key of (stream, revision) to the index: claim
 * streams are named by a hash, so a table keyed by them (WITHOUT ROWID) put every whole row at a
 * random place.
 */
const CLAIMS_TABLE = `
  CREATE TABLE claims (
    stream   TEXT    NOT NULL,
    revision INTEGER NOT NULL,
    id       TEXT    NOT NULL,
    type     TEXT    NOT NULL,
    created  INTEGER NOT NULL,
    data     TEXT    NOT NULL,
    metadata TEXT    NOT NULL
  );
  CREATE INDEX claims_by_key ON claims (${claimKey('stream')}, revision);
`;

/** A claim stream's rows: by the index's key, then the whole name (named parameter @stream). */
const CLAIM_STREAM = `${claimKey('stream')} = ${claimKey('@stream')} AND stream = +@stream`;

const COLUMNS = 'seq, id, stream, revision, type, created, data, metadata';
/** A claim's row as an EventRow: it has no place in the log (seq 0). */
const CLAIM_COLUMNS = '0 AS seq, id, stream, revision, type, created, data, metadata';
const STREAM_COLUMNS = 'seq, id, stream, revision, type, created, data';

export type Db = Database.Database;

/** A row of the events table: the event as stored (the text the chain check hashes) at its seq. */
interface EventRow extends StoredText {
  seq: number;
}

/** A row as stored, in COLUMNS order: the chain check hashes its text without parsing it. */
export type StoredRow = [seq: number, id: string, stream: string, revision: number, type: string, created: number, data: string, metadata: string];

export interface LogEntry {
  seq: number;
  event: RecordedEvent;
}

export interface Page {
  entries: LogEntry[];
  /** Everything up to this seq has been looked at (matching or not). */
  cursor: number;
  /** True when the page reached the head of the log as it was when read. */
  caughtUp: boolean;
  /** The stored size of the page's events (data and metadata, in UTF-16 code units). */
  bytes: number;
}

/** Opens the log file: WAL with synchronous=FULL, so an acknowledged append survives kill -9 and power loss. */
export function openLogFile(path: string): Db {
  const db = openSqliteFile(path, { synchronous: 'FULL' });
  // The group commit writes each append of several events in a savepoint, whose statement journal
  // grows with the commit and went to a temporary file, a write syscall per page; it is needed
  // only until COMMIT (never for durability), so it stays in memory.
  db.pragma('temp_store = MEMORY');
  applySchema(db, EVENTS_SCHEMA);
  changeSchema(db, () => {
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'claims_by_key'").get()) return;
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'claims'").get()) {
      // The first claims table, unique on the whole (stream, revision): its rows, in their order,
      // into the table of today. SQLite cannot drop a table's UNIQUE but by making the table again.
      db.exec('ALTER TABLE claims RENAME TO claims_by_name');
      db.exec(CLAIMS_TABLE);
      db.exec('INSERT INTO claims SELECT stream, revision, id, type, created, data, metadata FROM claims_by_name ORDER BY rowid; DROP TABLE claims_by_name');
      return;
    }
    // A log written before the claims table kept its claim streams in the events table: they are
    // copied over once, with the table's creation, and read from there on (the log keeps its rows).
    db.exec(CLAIMS_TABLE);
    const copy = db.prepare('INSERT INTO claims SELECT stream, revision, id, type, created, data, metadata FROM events WHERE stream >= ? AND stream < ?');
    for (const prefix of CLAIM_STREAM_PREFIXES) copy.run(prefix, prefixEnd(prefix));
  });
  return db;
}

/** The least string above every string that starts with `prefix` (for a range on a stream index). */
export function prefixEnd(prefix: string): string {
  if (prefix === '') return '\u{10FFFF}';
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

export function storedRowEvent(row: StoredRow): RecordedEvent {
  return toRecordedEvent({ seq: row[0], id: row[1], stream: row[2], revision: row[3], type: row[4], created: row[5], data: row[6], metadata: row[7] });
}

/** A row of the stream-order read without its metadata, in STREAM_COLUMNS order. */
type StreamRow = [seq: number, id: string, stream: string, revision: number, type: string, created: number, data: string];

/**
 * A row of the stream-order read (audit verification) as a plain event (docs/performance-log.md,
 * verify lanes 2 and 3): its metadata is neither read from the file nor parsed.
 */
function streamRowEvent(row: StreamRow): StreamEvent {
  return {
    id: row[1],
    type: row[4],
    stream: row[2],
    revision: row[3],
    position: seqPosition(row[0]),
    created: new Date(row[5]),
    data: JSON.parse(row[6]) as Record<string, unknown>,
  };
}

/** formatPosition of a seq (a safe integer, as SQLite gives it), without a BigInt on the way. */
function seqPosition(seq: number): Position {
  const digits = String(seq).padStart(20, '0');
  return `${digits}:${digits}`;
}

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    type: row.type,
    stream: row.stream,
    revision: row.revision,
    position: formatPosition(BigInt(row.seq)),
    created: new Date(row.created),
    data: JSON.parse(row.data) as Record<string, unknown>,
    metadata: JSON.parse(row.metadata) as EventMetadata,
  };
}

/** Prefix matching in SQL: instr() finds the first occurrence, which is 1 exactly for a prefix. */
function filterClause(filter: EventFilter | undefined): string {
  if (!filter) return '';
  if (filter.streamPrefixes.length === 0) return ' AND 0';
  return ` AND (${filter.streamPrefixes.map(() => 'instr(stream, ?) = 1').join(' OR ')})`;
}

export class EventLog {
  private readonly streamRevisionStmt;
  private readonly insertStmt;
  private readonly lastCreatedStmt;
  private readonly lastHashStmt;
  private readonly headSeqStmt;
  private readonly forwardsStmt;
  private readonly backwardsStmt;
  /** Page queries by number of filter prefixes (-1: no filter). */
  private readonly pageStmts = new Map<number, Database.Statement<unknown[], EventRow>>();
  private readonly canonicalMetadata = canonicalMetadataOnce();
  /** The last page read per filter (readAfter). */
  private readonly lastPages = new Map<string | null, { cursor: number; head: number; limit: number; page: Page }>();
  private readonly storedStmt;
  private readonly streamsStmts;
  private readonly claims;

  constructor(private readonly db: Db) {
    this.streamRevisionStmt = db.prepare<[string], { revision: number }>(
      `SELECT revision FROM events WHERE stream = ${BOUND_VALUE} ORDER BY revision DESC LIMIT 1`,
    );
    this.insertStmt = db.prepare<[string, string, number, string, number, string, string]>(
      'INSERT INTO events (id, stream, revision, type, created, data, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.lastCreatedStmt = db.prepare<[], { created: number }>('SELECT created FROM events ORDER BY seq DESC LIMIT 1');
    this.lastHashStmt = db.prepare<[], { hash: string | null }>(
      "SELECT json_extract(metadata, '$.hash') AS hash FROM events ORDER BY seq DESC LIMIT 1",
    );
    this.headSeqStmt = db.prepare<[], { head: number | null }>('SELECT max(seq) AS head FROM events');
    this.forwardsStmt = db.prepare<[string, number, number], EventRow>(
      `SELECT ${COLUMNS} FROM events WHERE stream = ${BOUND_VALUE} AND revision >= ${BOUND_VALUE} ORDER BY revision ASC LIMIT ${BOUND_COUNT}`,
    );
    this.storedStmt = db.prepare<[number, number, number], StoredRow>(`SELECT ${COLUMNS} FROM events WHERE seq > ${BOUND_VALUE} AND seq <= ${BOUND_VALUE} ORDER BY seq LIMIT ${BOUND_COUNT}`).raw(true);
    // Along the (stream, revision) index: streams in name order, each in revision order.
    const streams = (from: string) =>
      db.prepare<[string, string, number], StreamRow>(`SELECT ${STREAM_COLUMNS} FROM events WHERE stream ${from} ${BOUND_VALUE} AND stream < ${BOUND_VALUE} ORDER BY stream, revision LIMIT ${BOUND_COUNT}`).raw(true);
    this.streamsStmts = { from: streams('>='), after: streams('>') };
    this.backwardsStmt = db.prepare<[string, number, number], EventRow>(
      `SELECT ${COLUMNS} FROM events WHERE stream = ${BOUND_VALUE} AND revision <= ${BOUND_VALUE} ORDER BY revision DESC LIMIT ${BOUND_COUNT}`,
    );
    this.claims = {
      revision: db.prepare<[{ stream: string }], { revision: number }>(`SELECT revision FROM claims WHERE ${CLAIM_STREAM} ORDER BY revision DESC LIMIT 1`),
      insert: db.prepare<[string, number, string, string, number, string, string]>('INSERT INTO claims (stream, revision, id, type, created, data, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      forwards: db.prepare<[{ stream: string; revision: number; count: number }], EventRow>(
        `SELECT ${CLAIM_COLUMNS} FROM claims WHERE ${CLAIM_STREAM} AND revision >= +@revision ORDER BY revision ASC LIMIT CAST(@count AS INTEGER)`,
      ),
      backwards: db.prepare<[{ stream: string; revision: number; count: number }], EventRow>(
        `SELECT ${CLAIM_COLUMNS} FROM claims WHERE ${CLAIM_STREAM} AND revision <= +@revision ORDER BY revision DESC LIMIT CAST(@count AS INTEGER)`,
      ),
    };
  }

  streamRevision(stream: string, claim = false): number | undefined {
    return (claim ? this.claims.revision.get({ stream }) : this.streamRevisionStmt.get(stream))?.revision;
  }

  /** Inserts one event of a claim stream: beside the log, unchained (its readers judge only its last event). */
  insertClaim(stream: string, revision: number, event: NewEvent, created: number): { bytes: number } {
    const data = JSON.stringify(event.data);
    const metadata = this.canonicalMetadata(event.metadata);
    this.claims.insert.run(stream, revision, event.id, event.type, created, data, metadata);
    return { bytes: data.length + metadata.length };
  }

  /**
   * Inserts one event chained after `previous` (chain.ts) and answers its seq and hash.
   * canonicalJson follows JSON.stringify's rules, so the hash of the values given equals the one
   * verification computes from the stored text.
   */
  insert(stream: string, revision: number, event: NewEvent, created: number, previous: string): { seq: number; hash: string; bytes: number } {
    // Stored as canonical JSON, the very text hashed (chain.ts: storedMetadataJson).
    const data = canonicalJson(event.data);
    const metadataJson = this.canonicalMetadata(event.metadata);
    const hash = chainHashOfJson(previous, { id: event.id, stream, revision, type: event.type, created, data, metadata: metadataJson });
    const stored = storedMetadataJson(metadataJson, hash);
    const seq = Number(this.insertStmt.run(event.id, stream, revision, event.type, created, data, stored).lastInsertRowid);
    return { seq, hash, bytes: data.length + stored.length };
  }


  /** Read inside the write transaction: the hash the next event chains on (GENESIS before the chain began). */
  chainHead(): string {
    return this.lastHashStmt.get()?.hash ?? GENESIS;
  }

  /** Read inside the write transaction: commit times never go backwards along the log, even
   *  when the clock does or another process's clock differs. */
  commitTime(): number {
    return Math.max(Date.now(), this.lastCreatedStmt.get()?.created ?? 0);
  }

  headSeq(): number {
    return this.headSeqStmt.get()?.head ?? 0;
  }

  /** `fromRevision` included; undefined: from the first (forwards) or the last (backwards). */
  readStream(stream: string, backwards: boolean, maxCount: number, fromRevision?: number, claim = false): RecordedEvent[] {
    const revision = fromRevision ?? (backwards ? Number.MAX_SAFE_INTEGER : 0);
    if (claim) return (backwards ? this.claims.backwards : this.claims.forwards).all({ stream, revision, count: maxCount }).map(toRecordedEvent);
    return (backwards ? this.backwardsStmt : this.forwardsStmt).all(stream, revision, maxCount).map(toRecordedEvent);
  }

  /** Rows after seq `cursor` up to seq `until`, as stored, in log order. */
  storedAfter(cursor: number, until: number, limit: number): StoredRow[] {
    return this.storedStmt.all(cursor, until, limit);
  }

  /**
   * Events of the streams named from `from` (included, or excluded with `after`) up to `below`
   * (excluded), in stream then revision order, at most `limit`.
   */
  streamRange(from: string, after: boolean, below: string, limit: number): StreamEvent[] {
    return (after ? this.streamsStmts.after : this.streamsStmts.from).all(from, below, limit).map(streamRowEvent);
  }

  /** Events after `cursor` matching `filter`, bounded by the head read first so that an empty
   *  page proves nothing matching exists up to that head. */
  readAfter(cursor: number, filter: EventFilter | undefined, limit: number): Page {
    const head = this.headSeq();
    // The subscriptions of one thread (the records projection and the reactors) follow the log
    // with one filter and wake together on each commit: each asks for the page the first one read.
    // Shared as read (the events are never changed by their readers), parsed once.
    const key = filter ? filter.streamPrefixes.join('\u0000') : null;
    const last = this.lastPages.get(key);
    if (last && last.cursor === cursor && last.head === head && last.limit === limit) return last.page;
    const page = this.readPage(cursor, head, filter, limit);
    this.lastPages.set(key, { cursor, head, limit, page });
    return page;
  }

  /** After events were changed in place (rewriteUnchained): no page read before is handed out again. */
  forgetPages(): void {
    this.lastPages.clear();
  }

  private readPage(cursor: number, head: number, filter: EventFilter | undefined, limit: number): Page {
    const rows = this.pageStatement(filter).all(cursor, head, ...(filter?.streamPrefixes ?? []), limit);
    const full = rows.length === limit;
    const last = rows[rows.length - 1];
    let bytes = 0;
    for (const row of rows) bytes += row.data.length + row.metadata.length;
    return {
      entries: rows.map((row) => ({ seq: row.seq, event: toRecordedEvent(row) })),
      cursor: full && last ? last.seq : Math.max(cursor, head),
      caughtUp: !full,
      bytes,
    };
  }

  private pageStatement(filter: EventFilter | undefined): Database.Statement<unknown[], EventRow> {
    const key = filter ? filter.streamPrefixes.length : -1;
    let stmt = this.pageStmts.get(key);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], EventRow>(
        `SELECT ${COLUMNS} FROM events WHERE seq > ? AND seq <= ?${filterClause(filter)} ORDER BY seq LIMIT ${BOUND_COUNT}`,
      );
      this.pageStmts.set(key, stmt);
    }
    return stmt;
  }
}

import { applySchema } from '../../sqlite/file.js';
import type { Db } from './eventLog.js';

/**
 * A persistent subscription group's durable state: its checkpoint, retry counts, parked events and
 * the parked events an operator asked to replay (written by any process, taken by the one serving
 * the group).
 */

const GROUPS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS persistent_groups (
    name       TEXT    PRIMARY KEY,
    checkpoint INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS persistent_retries (
    grp         TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    retry_count INTEGER NOT NULL,
    PRIMARY KEY (grp, seq)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS persistent_parked (
    grp       TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    reason    TEXT    NOT NULL,
    parked_at INTEGER NOT NULL,
    PRIMARY KEY (grp, seq)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS persistent_replays (
    grp TEXT    NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (grp, seq)
  ) WITHOUT ROWID;
`;

export interface ParkedRecord {
  seq: number;
  reason: string;
  parkedAt: number;
}

interface GroupState {
  checkpoint: number;
  retries: Map<number, number>;
  parked: Set<number>;
}

/** The group tables, created on first use of a persistent subscription. */
export class GroupTables {
  private readonly ensureStmt;
  private readonly checkpointStmt;
  private readonly retriesStmt;
  private readonly parkedStmt;
  private readonly saveCheckpointStmt;
  private readonly saveRetryStmt;
  private readonly saveParkedStmt;
  private readonly forgetRetriesStmt;
  private readonly replaysStmt;
  private readonly requestReplayTx;
  private readonly loadTx;
  readonly save;

  constructor(db: Db) {
    applySchema(db, GROUPS_SCHEMA);
    // A new group starts at the current end of the log: it must not re-send history.
    this.ensureStmt = db.prepare<[string]>(
      'INSERT INTO persistent_groups (name, checkpoint) VALUES (?, (SELECT coalesce(max(seq), 0) FROM events)) ON CONFLICT (name) DO NOTHING',
    );
    this.checkpointStmt = db.prepare<[string], { checkpoint: number }>(
      'SELECT checkpoint FROM persistent_groups WHERE name = ?',
    );
    this.retriesStmt = db.prepare<[string, number], { seq: number; retry_count: number }>(
      'SELECT seq, retry_count FROM persistent_retries WHERE grp = ? AND seq > ?',
    );
    this.parkedStmt = db.prepare<[string, number], { seq: number }>(
      'SELECT seq FROM persistent_parked WHERE grp = ? AND seq > ?',
    );
    // max(): a checkpoint never moves back, even if a second process serves the group by mistake.
    this.saveCheckpointStmt = db.prepare<[number, string]>(
      'UPDATE persistent_groups SET checkpoint = max(checkpoint, ?) WHERE name = ?',
    );
    this.saveRetryStmt = db.prepare<[string, number, number]>(
      `INSERT INTO persistent_retries (grp, seq, retry_count) VALUES (?, ?, ?)
       ON CONFLICT (grp, seq) DO UPDATE SET retry_count = excluded.retry_count`,
    );
    this.saveParkedStmt = db.prepare<[string, number, string, number]>(
      `INSERT INTO persistent_parked (grp, seq, reason, parked_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (grp, seq) DO UPDATE SET reason = excluded.reason, parked_at = excluded.parked_at`,
    );
    this.forgetRetriesStmt = db.prepare<[string, number]>('DELETE FROM persistent_retries WHERE grp = ? AND seq <= ?');
    this.replaysStmt = db.prepare<[string], { seq: number }>('SELECT seq FROM persistent_replays WHERE grp = ? ORDER BY seq');
    const moveParked = db.prepare<[string]>('INSERT OR IGNORE INTO persistent_replays (grp, seq) SELECT grp, seq FROM persistent_parked WHERE grp = ?');
    const forgetParked = db.prepare<[string]>('DELETE FROM persistent_parked WHERE grp = ?');
    this.requestReplayTx = db.transaction((name: string): number => {
      const moved = moveParked.run(name).changes;
      forgetParked.run(name);
      return moved;
    });
    const forgetReplay = db.prepare<[string, number]>('DELETE FROM persistent_replays WHERE grp = ? AND seq = ?');
    this.loadTx = db.transaction((name: string): GroupState => {
      this.ensureStmt.run(name);
      const checkpoint = this.checkpointStmt.get(name)?.checkpoint ?? 0;
      const retries = new Map(this.retriesStmt.all(name, checkpoint).map((r) => [r.seq, r.retry_count] as const));
      const parked = new Set(this.parkedStmt.all(name, checkpoint).map((r) => r.seq));
      return { checkpoint, retries, parked };
    });
    this.save = db.transaction(
      (name: string, checkpoint: number, retries: Map<number, number>, parked: ParkedRecord[], replayed: number[] = []) => {
        for (const [seq, count] of retries) this.saveRetryStmt.run(name, seq, count);
        // A replayed event is done (acked, or parked again below) in the same transaction.
        for (const seq of replayed) forgetReplay.run(name, seq);
        for (const p of parked) this.saveParkedStmt.run(name, p.seq, p.reason, p.parkedAt);
        this.saveCheckpointStmt.run(checkpoint, name);
        this.forgetRetriesStmt.run(name, checkpoint);
      },
    );
  }

  /** Moves the group's parked events to its replay requests; returns how many. */
  requestReplay(name: string): number {
    return this.requestReplayTx.immediate(name);
  }

  /** The events an operator asked to replay and that are not done yet. */
  replays(name: string): number[] {
    return this.replaysStmt.all(name).map((row) => row.seq);
  }

  /** The group's saved checkpoint (seq), undefined when there is no such group. Creates nothing. */
  checkpointOf(name: string): number | undefined {
    return this.checkpointStmt.get(name)?.checkpoint;
  }

  /** Creates the group (at the end of the log) when missing. */
  ensure(name: string): void {
    this.ensureStmt.run(name);
  }

  /** Creates the group when missing and returns what it remembers. */
  load(name: string): GroupState {
    return this.loadTx.immediate(name);
  }
}

import type Database from 'better-sqlite3';
import { formatSingleNumber, singleNumberOf, type Position } from '../../eventstore/position.js';

/**
 * How a generation keeps a record's creation position (the documents row, two of its indexes and
 * every filter row): generations made since this existed declare `created_position INTEGER` and
 * keep the embedded log's position as its number; earlier ones declare TEXT and keep the log's
 * 41-character text. An integer is a quarter of the text in every index entry that orders a list,
 * and the filter rows, six or so per record, cost the projector markedly less to insert (see
 * docs/performance.md). A TEXT column would turn a bound integer back into text (its affinity),
 * so each generation is written in the form its table declares, and read back into the log's form
 * whichever it is. Both order as the log does, and no statement compares them with a bound value.
 */

/** A creation position as a generation's column holds it. */
export type StoredPosition = string | number;

export interface PositionLayout {
  /** The position to bind for this generation's columns. */
  stored(position: Position): StoredPosition;
}

const TEXT: PositionLayout = { stored: (position) => position };

const INTEGER: PositionLayout = {
  stored(position) {
    const n = singleNumberOf(position);
    // Only the embedded log feeds this store, and its positions are all of that form.
    if (n === null) throw new RangeError(`the embedded read store keeps positions of the embedded log only, got ${position}`);
    return n;
  },
};

/** The layout of a generation whose tables exist, by the declared type of its documents table's column. */
export function positionLayoutOf(db: Database.Database, documents: string): PositionLayout {
  const columns = db.prepare(`PRAGMA table_info(${documents})`).all() as { name: string; type: string }[];
  const column = columns.find((c) => c.name === 'created_position');
  return column && column.type.toUpperCase() === 'INTEGER' ? INTEGER : TEXT;
}

/** A stored position in the log's form. */
export function positionOf(stored: StoredPosition): Position {
  return typeof stored === 'number' ? formatSingleNumber(stored) : stored;
}

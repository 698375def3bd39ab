/**
 * A position in the global log ($all). EventStoreDB positions are a (commit, prepare) pair of
 * 64-bit integers; we carry them as one fixed-width string so that positions are JSON-safe,
 * storable as-is in any read store, and ordered by plain string comparison exactly like the log.
 */
export type Position = string;

const WIDTH = 20; // digits of 2^64 - 1

export function formatPosition(commit: bigint, prepare: bigint = commit): Position {
  if (commit < 0n || prepare < 0n) throw new RangeError('positions are never negative');
  return `${commit.toString().padStart(WIDTH, '0')}:${prepare.toString().padStart(WIDTH, '0')}`;
}

export function parsePosition(position: Position): { commit: bigint; prepare: bigint } {
  const match = /^(\d{20}):(\d{20})$/.exec(position);
  if (!match) throw new RangeError(`not a log position: ${position}`);
  return { commit: BigInt(match[1]!), prepare: BigInt(match[2]!) };
}

export function comparePositions(a: Position, b: Position): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** True when `checkpoint` has reached (or passed) `position`. */
export function hasReached(checkpoint: Position | null, position: Position): boolean {
  return checkpoint !== null && checkpoint >= position;
}

/**
 * The number of a position whose commit and prepare are one safe integer (every position of the
 * embedded log), for a store that keeps it as an integer; null for any other.
 */
export function singleNumberOf(position: Position): number | null {
  const match = SINGLE.exec(position);
  if (!match) return null;
  const n = Number(match[1]);
  return Number.isSafeInteger(n) ? n : null;
}

/** formatPosition(n, n) of a safe integer, without BigInts (a reader of integer positions makes one per row). */
export function formatSingleNumber(n: number): Position {
  const half = String(n).padStart(WIDTH, '0');
  return `${half}:${half}`;
}

const SINGLE = /^(0{4}\d{16}):\1$/;

import { Conflict, InsufficientStorage, Unavailable } from '../../core/errors.js';
import type { AppendResult, StreamAppend } from '../port.js';

/**
 * What the API thread and its commit thread say to each other (threadedCommitter.ts,
 * commitThread.ts). A message between threads carries data, not classes: the errors the group
 * commit rejects an append with travel as their kind and fields, and are made again on arrival,
 * so a caller sees the same Conflict (409), InsufficientStorage (507) or Unavailable (503) as
 * from a commit on its own thread.
 */

export interface CommitThreadData {
  path: string;
}

/** An append (`then` undefined: `first` holds it alone) or a chain of appendThen. */
export interface QueuedItem {
  id: number;
  first: StreamAppend[];
  then?: StreamAppend[][];
}

export type CommitRequest = { close?: false; appends: QueuedItem[] } | { close: true };

export type WireError =
  | { kind: 'conflict'; stream: string; expected: string; actual: string }
  | { kind: 'storage' }
  | { kind: 'unavailable'; message: string }
  | { kind: 'error'; message: string; code?: string };

export interface Settled {
  id: number;
  result?: AppendResult;
  error?: WireError;
  /** A chain's dependents, in order. */
  then?: ({ result: AppendResult } | { error: WireError })[];
}

export interface CommitReply {
  settled: Settled[];
  /** The log's head after the commits these replies settle (the followers' wake). */
  head?: number;
  closed?: boolean;
}

export function toWire(error: unknown): WireError {
  if (error instanceof Conflict) return { kind: 'conflict', stream: error.stream, expected: error.expected, actual: error.actual };
  if (error instanceof InsufficientStorage) return { kind: 'storage' };
  if (error instanceof Unavailable) return { kind: 'unavailable', message: error.message };
  const code = (error as { code?: unknown } | null)?.code;
  return { kind: 'error', message: error instanceof Error ? error.message : String(error), ...(typeof code === 'string' ? { code } : {}) };
}

export function fromWire(error: WireError): Error {
  switch (error.kind) {
    case 'conflict':
      return new Conflict(error.stream, error.expected, error.actual);
    case 'storage':
      return new InsufficientStorage();
    case 'unavailable':
      return new Unavailable(error.message);
    case 'error':
      // SQLite's error code stays with it, for a caller that tells errors by their code.
      return Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code });
  }
}

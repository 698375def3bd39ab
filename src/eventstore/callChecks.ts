import type { ExpectedRevision, NewEvent } from './port.js';

/**
 * The port's rules for a call's arguments, checked alike by every adapter that checks them (the
 * embedded and PostgreSQL stores): a broken call is a programming error (RangeError), never a
 * write of something the contract does not allow.
 */

export function validateCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
}

export function validateAppend(stream: string, events: NewEvent[], expected: ExpectedRevision): void {
  if (typeof stream !== 'string' || stream.length === 0) throw new RangeError('stream name must be a non-empty string');
  if (events.length === 0) throw new RangeError(`append to ${stream} needs at least one event`);
  if (typeof expected === 'number') validateCount('expected revision', expected, 0);
  else if (expected !== 'any' && expected !== 'no_stream' && expected !== 'stream_exists') {
    throw new RangeError(`unknown expected revision: ${String(expected)}`);
  }
}

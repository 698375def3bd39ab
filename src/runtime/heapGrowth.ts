import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a heap grow past what survived its last full collection. By default it may grow
 * several times that before collecting again, per isolate: under a stream of large bodies the API
 * thread and each role thread held mostly garbage, and the process grew past its memory target.
 * A quarter more than the live size keeps every thread's heap near its live data for a little
 * more collection work (figures: docs/performance-log.md, large bodies).
 * The flag is read at each collection, by every isolate of the process: set once, first thing.
 */
export const HEAP_GROWING_PERCENT = 25;

export function limitHeapGrowth(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

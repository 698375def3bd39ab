import type { ReadStreamsOptions, RecordedEvent, StreamEvent, StreamsPage } from '../port.js';
import { parsePosition, type Position } from '../position.js';

/**
 * `readStreams` on EventStoreDB, which keeps no index of stream names to range over: the streams
 * that began after `from` in $all (their first event, revision 0, found with the prefix filter),
 * each read whole, in the order they began. The cursor is the $all position of the last stream's
 * first event. A stream whose first event is gone (deleted, truncated) is not found.
 */

export interface StreamReads {
  /** A page of $all after `from`, only streams starting with `prefix`. */
  all(from: Position | 'start', prefix: string): Promise<RecordedEvent[]>;
  /** One stream, whole (without metadata). */
  stream(name: string): Promise<StreamEvent[]>;
}

export async function streamsByFirstEvent(read: StreamReads, options: ReadStreamsOptions): Promise<StreamsPage> {
  if (!Number.isSafeInteger(options.maxCount) || options.maxCount < 1) throw new RangeError('maxCount must be an integer >= 1');
  if (options.from !== 'start') parsePosition(options.from);
  const streams: StreamEvent[][] = [];
  let count = 0;
  for (let from: Position | 'start' = options.from; ; ) {
    const page = await read.all(from, options.prefix);
    if (page.length === 0) return { streams, next: null };
    for (const event of page) {
      if (event.revision !== 0 || !event.stream.startsWith(options.prefix)) continue;
      const stream = await read.stream(event.stream);
      if (stream.length === 0) continue;
      streams.push(stream);
      count += stream.length;
      if (count >= options.maxCount) return { streams, next: event.position };
    }
    from = page.at(-1)!.position;
  }
}

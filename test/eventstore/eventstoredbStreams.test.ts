import { describe, expect, it } from 'vitest';
import { streamsByFirstEvent, type StreamReads } from '../../src/eventstore/eventstoredb/streams.js';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { formatPosition } from '../../src/eventstore/position.js';

/** readStreams on EventStoreDB: streams found by their first event in $all, each read whole. */

const log: RecordedEvent[] = [];
const append = (stream: string) => {
  const revision = log.filter((event) => event.stream === stream).length;
  const position = formatPosition(BigInt(log.length + 1));
  log.push({ id: `e${log.length}`, type: 'Happened', stream, revision, position, created: new Date(0), data: {}, metadata: {} as RecordedEvent['metadata'] });
};
for (const stream of ['record-a', 'other-x', 'record-b', 'record-a', 'record-c', 'record-b', 'record-a']) append(stream);

const reads = (pageSize: number): StreamReads & { streamReads: string[] } => {
  const streamReads: string[] = [];
  return {
    streamReads,
    async all(from, prefix) {
      return log.filter((event) => (from === 'start' || event.position > from) && event.stream.startsWith(prefix)).slice(0, pageSize);
    },
    async stream(name) {
      streamReads.push(name);
      return name === 'record-c' ? [] : log.filter((event) => event.stream === name);
    },
  };
};

describe('streamsByFirstEvent', () => {
  it('gives each stream of the prefix whole, in the order they began, a page of about maxCount events at a time', async () => {
    const read = reads(2);
    const first = await streamsByFirstEvent(read, { prefix: 'record-', from: 'start', maxCount: 3 });
    expect(first.streams.map((events) => events.map((event) => `${event.stream}@${event.revision}`))).toEqual([['record-a@0', 'record-a@1', 'record-a@2']]);
    expect(first.next).toBe(log[0]!.position);
    const second = await streamsByFirstEvent(read, { prefix: 'record-', from: first.next!, maxCount: 3 });
    // record-c was deleted since its first event was written: nothing to give.
    expect(second).toEqual({ streams: [log.filter((event) => event.stream === 'record-b')], next: null });
    expect(read.streamReads).toEqual(['record-a', 'record-b', 'record-c']);
  });

  it('refuses a bad count or cursor', async () => {
    await expect(streamsByFirstEvent(reads(2), { prefix: 'record-', from: 'start', maxCount: 0 })).rejects.toThrow(RangeError);
    await expect(streamsByFirstEvent(reads(2), { prefix: 'record-', from: 'nonsense', maxCount: 1 })).rejects.toThrow(RangeError);
  });
});

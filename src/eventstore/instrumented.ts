import { Conflict } from '../core/errors.js';
import type { Metrics } from '../core/metrics.js';
import type { EventStore } from './port.js';

/** The event store with every append timed and counted by outcome (conflicts apart). */
export function instrumentAppends(events: EventStore, metrics: Metrics): EventStore {
  const timed = async <T>(append: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      const result = await append();
      metrics.append('ok', (performance.now() - started) / 1000);
      return result;
    } catch (error) {
      metrics.append(error instanceof Conflict ? 'conflict' : 'error', (performance.now() - started) / 1000);
      throw error;
    }
  };
  return {
    append: (stream, newEvents, options) => timed(() => events.append(stream, newEvents, options)),
    async appendThen(first, then) {
      const result = await timed(() => events.appendThen(first, then));
      // Each dependent append succeeds or fails alone: its conflicts count too.
      for (const outcome of result.then) if (outcome.status === 'rejected' && outcome.reason instanceof Conflict) metrics.append('conflict', 0);
      return result;
    },
    readStream: (stream, options) => events.readStream(stream, options),
    readAll: (options) => events.readAll(options),
    readStreams: (options) => events.readStreams(options),
    chainScope: events.chainScope,
    checkChain: (options) => events.checkChain(options),
    atomicGroups: events.atomicGroups,
    commitsOnOwnThread: events.commitsOnOwnThread,
    subscribeToAll: (options) => events.subscribeToAll(options),
    persistentSubscription: (group, options) => events.persistentSubscription(group, options),
    ensurePersistentGroup: (group, options) => events.ensurePersistentGroup(group, options),
    replayParked: (...args: Parameters<EventStore['replayParked']>) => events.replayParked(...args),
    groupCheckpoint: (group: string) => events.groupCheckpoint(group),
    headPosition: () => events.headPosition(),
    rewriteUnchained: (stream, rewrite) => events.rewriteUnchained(stream, rewrite),
    close: () => events.close(),
  };
}

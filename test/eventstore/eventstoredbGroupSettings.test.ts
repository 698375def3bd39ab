import {
  END,
  PersistentSubscriptionExistsError,
  START,
  convertToCommandError,
  type EventStoreDBClient,
  type PersistentSubscriptionToAllInfo,
  type PersistentSubscriptionToAllSettings,
} from '@eventstore/db-client';
import { describe, expect, it } from 'vitest';
import type { SubscriptionContext } from '../../src/eventstore/eventstoredb/control.js';
import {
  GROUP_BUFFERS,
  GroupSettingsRefused,
  classifyGroupCommandError,
  groupUpdate,
  persistentGroupSettings,
  toServerFilter,
} from '../../src/eventstore/eventstoredb/mapping.js';
import { ensurePersistentGroup, joinGroup, persistentSubscription } from '../../src/eventstore/eventstoredb/persistent.js';

/**
 * The persistent subscription group's settings against EventStoreDB's own rules, and what a
 * consumer's start does to a group that exists. No server runs here: the client's calls are
 * stubbed, the errors are the client's own classes built from the gRPC answer the server sends.
 */

/**
 * The rule the server applies to every group it creates or rebuilds: EventStoreDB 24.10,
 * src/EventStore.Core/Services/PersistentSubscription/PersistentSubscription.cs, constructor:
 * `if (ReadBatchSize >= BufferSize) throw new ArgumentOutOfRangeException("ReadBatchSize may not be
 * greater than or equal to BufferSize")`, which PersistentSubscriptionService answers with Fail.
 * BufferSize there is the history buffer; the live buffer holds what the reads bring too, so it
 * is held to the same rule here.
 */
function serverAccepts(settings: PersistentSubscriptionToAllSettings): boolean {
  return settings.readBatchSize >= 1 && settings.readBatchSize < settings.historyBufferSize && settings.readBatchSize < settings.liveBufferSize;
}

/** What the server answers a refused create or update: RpcExceptions.PersistentSubscriptionFailed (status Internal). */
function serverFail(group: string, reason: string): unknown {
  // The gRPC trailers as @grpc/grpc-js hands them to the client (Metadata.getMap()).
  const trailers: Record<string, string> = { exception: 'persistent-subscription-failed', 'stream-name': '$all', 'group-name': group, reason };
  const metadata = { getMap: () => trailers };
  const error = Object.assign(new Error(`13 INTERNAL: Subscription group ${group} on stream $all failed: '${reason}'`), {
    code: GRPC_INTERNAL,
    details: `Subscription group ${group} on stream $all failed: '${reason}'`,
    metadata,
  });
  return convertToCommandError(error);
}

const GRPC_INTERNAL = 13;
const GRPC_UNAVAILABLE = 14;

const exists = () => Object.create(PersistentSubscriptionExistsError.prototype) as Error;

interface Calls {
  creates: PersistentSubscriptionToAllSettings[];
  updates: PersistentSubscriptionToAllSettings[];
  infos: number;
}

function stubClient(behaviour: { create?: () => Promise<void>; update?: () => Promise<void>; info?: PersistentSubscriptionToAllInfo }): { client: EventStoreDBClient; calls: Calls } {
  const calls: Calls = { creates: [], updates: [], infos: 0 };
  const client = {
    createPersistentSubscriptionToAll: async (_group: string, settings: PersistentSubscriptionToAllSettings) => {
      calls.creates.push(settings);
      await behaviour.create?.();
    },
    getPersistentSubscriptionToAllInfo: async () => {
      calls.infos += 1;
      if (!behaviour.info) throw new Error('no info stubbed');
      return behaviour.info;
    },
    updatePersistentSubscriptionToAll: async (_group: string, settings: PersistentSubscriptionToAllSettings) => {
      calls.updates.push(settings);
      await behaviour.update?.();
    },
    subscribeToPersistentSubscriptionToAll: () => {
      throw new Error('the consumer must not subscribe to a group the server refused');
    },
  } as unknown as EventStoreDBClient;
  return { client, calls };
}

/** A group as getPersistentSubscriptionToAllInfo describes it. */
function info(settings: PersistentSubscriptionToAllSettings, checkpoint?: { commit: bigint; prepare: bigint }): PersistentSubscriptionToAllInfo {
  return {
    eventSource: '$all',
    groupName: 'webhooks',
    status: 'Live',
    settings,
    connections: [],
    stats: { lastCheckpointedEventPosition: checkpoint, lastKnownEventPosition: checkpoint },
  } as unknown as PersistentSubscriptionToAllInfo;
}

function recordingLogger() {
  const lines: { level: string; message: string }[] = [];
  return {
    lines,
    logger: {
      warn: (_details: object, message: string) => void lines.push({ level: 'warn', message }),
      error: (_details: object, message: string) => void lines.push({ level: 'error', message }),
    },
  };
}

describe("the group's settings keep to the server's rules", () => {
  it.each([
    ['defaults', {}],
    ['few retries, short timeout', { maxRetryCount: 0, messageTimeoutMs: 1_000 }],
    ['the fan-out', { maxRetryCount: 10, messageTimeoutMs: 60_000 }],
    ['a long timeout', { maxRetryCount: 100, messageTimeoutMs: 600_000 }],
  ])('%s: the read batch is smaller than both buffers', (_given, options) => {
    const settings = persistentGroupSettings(options);
    expect(serverAccepts(settings)).toBe(true);
    expect({ readBatchSize: settings.readBatchSize, historyBufferSize: settings.historyBufferSize, liveBufferSize: settings.liveBufferSize }).toEqual(GROUP_BUFFERS);
  });

  it('the API (creating the first webhook) and a dispatcher make the same group: a consumer start changes nothing', async () => {
    const api = stubClient({});
    // The webhook's creation: no consumer options (src/setup/webhooks.ts).
    const ctx: SubscriptionContext = { client: api.client, logger: undefined, open: new Set(), assertOpen: () => undefined, messageTimeoutMs: undefined };
    await ensurePersistentGroup(ctx, 'webhooks', { filter: { streamPrefixes: ['record-'] } });
    const made = api.calls.creates[0]!;
    // The dispatcher: its retries and a large in-flight buffer of its own (src/webhooks/fanOut.ts).
    const dispatcher = stubClient({ create: async () => Promise.reject(exists()), info: info({ ...made }) });
    await joinGroup({ client: dispatcher.client, logger: undefined }, 'webhooks', persistentGroupSettings({ maxRetryCount: 10 }), toServerFilter({ streamPrefixes: ['record-'] }));
    expect(dispatcher.calls.infos).toBe(1);
    expect(dispatcher.calls.updates).toEqual([]);
  });
});

describe('a refusal of the server is permanent and said once', () => {
  const reason = 'ReadBatchSize may not be greater than or equal to BufferSize';

  it("the client's error for the server's Fail is classified as refused, with the server's reason", () => {
    const error = serverFail('webhooks', reason);
    expect((error as { type?: string }).type).toBe('persistent-subscription-failed');
    expect(classifyGroupCommandError(error)).toBe('refused');
    // Unreachable servers stay transient.
    expect(classifyGroupCommandError(convertToCommandError(Object.assign(new Error('14 UNAVAILABLE'), { code: GRPC_UNAVAILABLE, details: 'No connection established' })))).toBe('transient');
  });

  it('creating the group (the first webhook) rejects with GroupSettingsRefused naming the reason', async () => {
    const { client } = stubClient({ create: async () => Promise.reject(serverFail('webhooks', reason)) });
    const ctx: SubscriptionContext = { client, logger: undefined, open: new Set(), assertOpen: () => undefined, messageTimeoutMs: undefined };
    const failure = ensurePersistentGroup(ctx, 'webhooks');
    await expect(failure).rejects.toBeInstanceOf(GroupSettingsRefused);
    await expect(failure).rejects.toThrow(reason);
  });

  it('so does an update the server refuses; a failing look at the group is not a refusal', async () => {
    const wanted = persistentGroupSettings();
    const current = info({ ...wanted, maxRetryCount: 3, startFrom: START });
    const refusing = stubClient({ create: async () => Promise.reject(exists()), update: async () => Promise.reject(serverFail('webhooks', reason)), info: current });
    await expect(joinGroup({ client: refusing.client, logger: undefined }, 'webhooks', wanted, toServerFilter(undefined))).rejects.toBeInstanceOf(GroupSettingsRefused);
    const starting = stubClient({ create: async () => Promise.reject(exists()) }); // its info call fails
    await expect(joinGroup({ client: starting.client, logger: undefined }, 'webhooks', wanted, toServerFilter(undefined))).rejects.not.toBeInstanceOf(GroupSettingsRefused);
  });

  it('a consumer ends with the error after one try, logged once, instead of retrying for ever', async () => {
    const { client, calls } = stubClient({ create: async () => Promise.reject(serverFail('webhooks', reason)) });
    const { lines, logger } = recordingLogger();
    const ctx: SubscriptionContext = { client, logger, open: new Set(), assertOpen: () => undefined, messageTimeoutMs: undefined };
    const subscription = persistentSubscription(ctx, 'webhooks', { filter: { streamPrefixes: ['record-'] } });
    const iterator = subscription[Symbol.asyncIterator]();
    await expect(iterator.next()).rejects.toBeInstanceOf(GroupSettingsRefused);
    expect(calls.creates).toHaveLength(1);
    expect(lines).toEqual([{ level: 'error', message: 'EventStoreDB refused the persistent subscription group; not retrying' }]);
    await subscription.close();
  });
});

describe("a consumer's start never moves an existing group's start point", () => {
  const wanted = persistentGroupSettings({ maxRetryCount: 10 });
  const checkpoint = { commit: 1_000n, prepare: 1_000n };

  it('same settings: no update (an update rebuilds the group and drops its consumers)', () => {
    expect(groupUpdate(info({ ...wanted }), wanted)).toBe('keep');
    expect(groupUpdate(info({ ...wanted, startFrom: START }, checkpoint), wanted)).toBe('keep');
  });

  it("other settings: the update carries only this code's settings and the group's own start, never END", () => {
    const position = { commit: 42n, prepare: 42n };
    const plan = groupUpdate(info({ ...wanted, maxRetryCount: 3, startFrom: position }), wanted);
    expect(plan).toEqual({ settings: { ...wanted, startFrom: position }, changed: ['maxRetryCount'] });
    const fromStart = groupUpdate(info({ ...wanted, readBatchSize: 500, startFrom: START }), wanted);
    expect(fromStart).toMatchObject({ settings: { startFrom: START, readBatchSize: GROUP_BUFFERS.readBatchSize }, changed: ['readBatchSize'] });
  });

  it('a group made at the end with no checkpoint yet is left alone (a rebuild would restart it at the end of the log now)', () => {
    expect(groupUpdate(info({ ...wanted, maxRetryCount: 3, startFrom: END }), wanted)).toBe('deferred');
    // With a checkpoint the rebuilt group resumes there: the update is safe.
    expect(groupUpdate(info({ ...wanted, maxRetryCount: 3, startFrom: END }, checkpoint), wanted)).toMatchObject({ settings: { startFrom: END, maxRetryCount: 10 } });
  });

  it('joinGroup updates an existing group only when its settings differ, and keeps its start', async () => {
    const position = { commit: 7n, prepare: 7n };
    const same = stubClient({ create: async () => Promise.reject(exists()), info: info({ ...wanted, startFrom: position }) });
    await joinGroup({ client: same.client, logger: undefined }, 'webhooks', wanted, toServerFilter(undefined));
    expect(same.calls.updates).toEqual([]);

    const older = stubClient({ create: async () => Promise.reject(exists()), info: info({ ...wanted, messageTimeout: 30_000, startFrom: position }) });
    const { lines, logger } = recordingLogger();
    await joinGroup({ client: older.client, logger }, 'webhooks', wanted, toServerFilter(undefined));
    expect(older.calls.updates).toEqual([{ ...wanted, startFrom: position }]);
    expect(lines.map((line) => line.level)).toEqual(['warn']);

    const fresh = stubClient({ create: async () => Promise.reject(exists()), info: info({ ...wanted, messageTimeout: 30_000, startFrom: END }) });
    await joinGroup({ client: fresh.client, logger: undefined }, 'webhooks', wanted, toServerFilter(undefined));
    expect(fresh.calls.updates).toEqual([]);
  });
});

import { END, PersistentSubscriptionExistsError, type EventStoreDBClient } from '@eventstore/db-client';
import { describe, expect, it } from 'vitest';
import type { SubscriptionContext } from '../../src/eventstore/eventstoredb/control.js';
import { ensurePersistentGroup } from '../../src/eventstore/eventstoredb/persistent.js';

/** ensurePersistentGroup on EventStoreDB: one create call at the end of $all; an existing group is left alone. */

function contextWith(create: (...args: unknown[]) => Promise<void>): { ctx: SubscriptionContext; calls: unknown[][]; updates: number } {
  const calls: unknown[][] = [];
  const state = { updates: 0 };
  const client = {
    createPersistentSubscriptionToAll: (...args: unknown[]) => {
      calls.push(args);
      return create(...args);
    },
    updatePersistentSubscriptionToAll: async () => {
      state.updates += 1;
    },
  } as unknown as EventStoreDBClient;
  const ctx: SubscriptionContext = { client, logger: undefined, open: new Set(), assertOpen: () => undefined, messageTimeoutMs: undefined };
  return { ctx, calls, get updates() { return state.updates; } };
}

const exists = () => Object.create(PersistentSubscriptionExistsError.prototype) as Error;

describe('ensurePersistentGroup (EventStoreDB)', () => {
  it('creates the group from the end of the log, with the filter on the server side', async () => {
    const fake = contextWith(async () => undefined);
    await ensurePersistentGroup(fake.ctx, 'webhooks', { filter: { streamPrefixes: ['record-'] }, maxRetryCount: 3 });
    expect(fake.calls).toHaveLength(1);
    const [group, settings, options] = fake.calls[0] as [string, { startFrom: unknown; maxRetryCount: number }, { filter: unknown }];
    expect(group).toBe('webhooks');
    expect(settings.startFrom).toBe(END);
    expect(settings.maxRetryCount).toBe(3);
    expect(options.filter).toBeDefined();
  });

  it('leaves an existing group as it is (no update), and passes any other failure on', async () => {
    const existing = contextWith(async () => {
      throw exists();
    });
    await expect(ensurePersistentGroup(existing.ctx, 'webhooks')).resolves.toBeUndefined();
    expect(existing.updates).toBe(0);
    const failing = contextWith(async () => {
      throw new Error('unavailable');
    });
    await expect(ensurePersistentGroup(failing.ctx, 'webhooks')).rejects.toThrow('unavailable');
  });
});

import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { openEventStoreDb } from '../../src/eventstore/eventstoredb/index.js';
import { Conflict, Unavailable } from '../../src/core/errors.js';
import { until } from '../support/until.js';

/**
 * The EventStoreDB adapter with the real client against an address where nothing listens (no
 * server of any kind): what it does while the server is down. Subscriptions must keep trying with
 * backoff, not fail or spin, and close() must end them; commands must fail, not hang.
 */

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Waits until a second try has been logged (a deadline: on a busy machine one try of the client
 * may take long), and at least 1.2 s in all, the time over which the tries are counted: with the
 * backoff's waits (100 ms doubling) there are a handful by then on any machine, a busy loop
 * would make far more, and a slower machine only fewer.
 */
async function triedAgain(warnings: string[]): Promise<void> {
  const started = Date.now();
  await until(() => warnings.length >= 2, 20_000, 'a second try');
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_200 - (Date.now() - started))));
}

function recordingLogger() {
  const warnings: string[] = [];
  const errors: string[] = [];
  return {
    warnings,
    errors,
    logger: { warn: (_details: object, message: string) => void warnings.push(message), error: (_details: object, message: string) => void errors.push(message) },
  };
}

describe('EventStoreDB adapter while the server is unreachable', () => {
  it('a catch-up subscription keeps resubscribing with backoff until closed', async () => {
    const { warnings, logger } = recordingLogger();
    const store = openEventStoreDb({ connectionString: `esdb://127.0.0.1:${await closedPort()}?tls=false`, logger });
    const subscription = store.subscribeToAll({ from: 'start' });
    const received: unknown[] = [];
    const consuming = (async () => {
      for await (const event of subscription) received.push(event);
    })();
    await triedAgain(warnings);
    expect(warnings.length).toBeLessThan(12); // backoff, not a busy loop
    expect(warnings.every((message) => /resubscribing/.test(message))).toBe(true);
    await subscription.close();
    await expect(consuming).resolves.toBeUndefined();
    expect(received).toEqual([]);
    await store.close();
  });

  it('a persistent subscription keeps trying to create/join its group until closed', async () => {
    const { warnings, logger } = recordingLogger();
    const store = openEventStoreDb({ connectionString: `esdb://127.0.0.1:${await closedPort()}?tls=false`, logger });
    const subscription = store.persistentSubscription('webhooks', { filter: { streamPrefixes: ['record-'] } });
    const consuming = (async () => {
      for await (const _ of subscription) throw new Error('nothing can be delivered');
    })();
    await triedAgain(warnings);
    // Not joined: the dispatcher reports not ready (issue 22 item 6).
    expect(subscription.connected()).toBe(false);
    await subscription.close();
    await expect(consuming).resolves.toBeUndefined();
    await store.close();
  });

  it('closing the store ends its open subscriptions', async () => {
    const store = openEventStoreDb({ connectionString: `esdb://127.0.0.1:${await closedPort()}?tls=false` });
    const subscription = store.subscribeToAll({ from: 'start', filter: { streamPrefixes: ['record-'] } });
    const consuming = (async () => {
      for await (const _ of subscription) throw new Error('nothing can be delivered');
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await store.close();
    await expect(consuming).resolves.toBeUndefined();
    expect(() => store.subscribeToAll({ from: 'start' })).toThrow(/closed/);
  });

  it('appends fail as Unavailable (503, not a bare 500 nor a Conflict) and do not hang', async () => {
    const store = openEventStoreDb({ connectionString: `esdb://127.0.0.1:${await closedPort()}?tls=false` });
    const appending = store.append(
      'record-1',
      [
        {
          id: '0b7c1f3e-6a55-4b0e-9b1a-1f2d3c4b5a69',
          type: 'RecordCreated',
          data: {},
          metadata: {
            source: 'api',
            actor: { type: 'system', id: 's', name: 'test' },
            actionId: 'a',
            correlationId: 'c',
            causationId: 'c',
          },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    const error = await appending.then(
      () => null,
      (caught: unknown) => caught,
    );
    // A node that does not answer, as one stopped by a full disk (EventStoreDB stops on ENOSPC).
    expect(error).toBeInstanceOf(Unavailable);
    expect((error as Unavailable).status).toBe(503);
    expect(error).not.toBeInstanceOf(Conflict);
    await expect(store.append('record-1', [], { expectedRevision: 'any' })).rejects.toThrow(RangeError);
    await store.close();
  }, 20_000);
});

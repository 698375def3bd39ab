import type { AppendGroup, EventStore, NewEvent, PersistentEvent, PersistentSubscription, RecordedEvent, StreamAppend, StreamEvent, Subscription } from '../eventstore/port.js';
import { OpenedEvents } from './openedEvents.js';
import { STORED_DATA } from '../eventstore/chain.js';
import { RECORD_ERASED } from '../events/records.js';
import { hasSealed, holdsPersonal, openData, recordIdOf, sealData } from './sealing.js';
import type { Vault } from './vault.js';

/**
 * The event store as the rest of the service sees it: personal values are sealed on their way
 * into the log and opened on their way out, so commands, projections, queries and webhooks read
 * plaintext (or null, once erased) and never know encryption exists. The store underneath, and
 * so the audit hash chain, only ever holds ciphertext; `stored` is that store, for the chain check.
 */

/** The personal fields of an object of a workspace (its catalogue's marks). */
export type PersonalFields = (workspaceId: string, object: string) => Promise<ReadonlySet<string>>;

export interface PrivateEventStore extends EventStore {
  readonly stored: EventStore;
  readonly vault: Vault;
}

export function privateEvents(stored: EventStore, vault: Vault, personalFields: PersonalFields, onClose?: () => Promise<void>): PrivateEventStore {
  const sealEvent = async (event: NewEvent, fieldsOf: PersonalFields = personalFields): Promise<NewEvent> => {
    const { data } = event;
    const scope = recordScope(data);
    if (scope === null) return event;
    const personal = await fieldsOf(scope.workspaceId, scope.object);
    if (!holdsPersonal(event.type, data, personal)) return event;
    const key = await vault.keyFor(recordIdOf(data)!, event.type === 'RecordCreated');
    return { ...event, data: sealData(event.type, data, personal, key) };
  };
  const sealAppend = async (append: StreamAppend, fieldsOf?: PersonalFields): Promise<StreamAppend> => ({
    ...append,
    events: await Promise.all(append.events.map((event) => sealEvent(event, fieldsOf))),
  });
  const sealGroup = async (group: AppendGroup, fieldsOf?: PersonalFields): Promise<AppendGroup> =>
    Array.isArray(group) ? Promise.all(group.map((append) => sealAppend(append, fieldsOf))) : sealAppend(group, fieldsOf);
  /**
   * A request's creates are appended together (thousands of events, mostly claims that hold no
   * personal value): the personal fields of each workspace and object are looked up once, and
   * only groups with an event that holds personal values go through sealGroup; the others are
   * written as given, without a promise per event.
   */
  const sealGroups = async (groups: AppendGroup[]): Promise<AppendGroup[]> => {
    const personal = new Map<string, ReadonlySet<string>>();
    const keyOf = (workspaceId: string, object: string) => `${workspaceId}\u0000${object}`;
    const holds = (event: NewEvent): boolean | Promise<boolean> => {
      const { data } = event;
      const scope = recordScope(data);
      if (scope === null) return false;
      const key = keyOf(scope.workspaceId, scope.object);
      const fields = personal.get(key);
      if (fields !== undefined) return holdsPersonal(event.type, data, fields);
      return personalFields(scope.workspaceId, scope.object).then((found) => {
        personal.set(key, found);
        return holdsPersonal(event.type, data, found);
      });
    };
    const known: PersonalFields = async (workspaceId, object) => personal.get(keyOf(workspaceId, object)) ?? personalFields(workspaceId, object);
    const sealed: (AppendGroup | Promise<AppendGroup>)[] = [];
    for (const group of groups) {
      let seal = false;
      for (const append of Array.isArray(group) ? group : [group]) {
        for (const event of append.events) {
          const held = holds(event);
          if ((seal = typeof held === 'boolean' ? held : await held)) break;
        }
        if (seal) break;
      }
      sealed.push(seal ? sealGroup(group, known) : group);
    }
    return Promise.all(sealed);
  };

  const openAll = async <E extends StreamEvent>(events: E[]): Promise<E[]> => {
    const ids = new Set<string>();
    for (const event of events) if (hasSealed(event.type, event.data)) ids.add(recordIdOf(event.data)!);
    if (ids.size === 0) return events;
    const keys = await vault.existingKeys([...ids]);
    return events.map((event) =>
      hasSealed(event.type, event.data) ? { ...event, data: openData(event.type, event.data, keys.get(recordIdOf(event.data)!)), [STORED_DATA]: event.data } : event,
    );
  };
  // Several subscribers of one process (projector, reactors, webhook fan-out) read the same new
  // events: each is opened once. An erasure drops its record's entries, so no subscriber reads a
  // value opened before it from here afterwards (the erased event comes after them in the log).
  const opened = new OpenedEvents();
  const openOne = async (event: RecordedEvent): Promise<RecordedEvent> => {
    if (event.type === RECORD_ERASED) opened.forget(recordIdOf(event.data));
    if (!hasSealed(event.type, event.data)) return event;
    return opened.get(event.id) ?? opened.keep(event.id, recordIdOf(event.data), (await openAll([event]))[0]!, event.data);
  };

  return {
    stored,
    vault,
    chainScope: stored.chainScope,
    atomicGroups: stored.atomicGroups,
    commitsOnOwnThread: stored.commitsOnOwnThread,
    async append(stream, events, options) {
      return stored.append(stream, await Promise.all(events.map((event) => sealEvent(event))), options);
    },
    async appendThen(first, then) {
      const [sealedFirst, ...sealedThen] = await sealGroups([first, ...then]);
      return stored.appendThen(sealedFirst!, sealedThen);
    },
    async readStream(stream, options) {
      return openAll(await stored.readStream(stream, options));
    },
    async readAll(options) {
      return openAll(await stored.readAll(options));
    },
    async readStreams(options) {
      const page = await stored.readStreams(options);
      const opened = await openAll(page.streams.flat());
      let at = 0;
      return { next: page.next, streams: page.streams.map((stream) => opened.slice(at, (at += stream.length))) };
    },
    // The chain covers the events as stored (ciphertext): checked underneath.
    checkChain: (options) => stored.checkChain(options),
    subscribeToAll(options): Subscription {
      const subscription = stored.subscribeToAll(options);
      return {
        close: () => subscription.close(),
        async *[Symbol.asyncIterator]() {
          for await (const event of subscription) yield await openOne(event);
        },
      };
    },
    persistentSubscription(group, options): PersistentSubscription {
      const subscription = stored.persistentSubscription(group, options);
      return {
        close: () => subscription.close(),
        connected: () => subscription.connected(),
        async *[Symbol.asyncIterator]() {
          for await (const handed of subscription) {
            const event = await openOne(handed.event);
            yield event === handed.event ? handed : ({ ...handed, event, ack: () => handed.ack(), nack: (a, r) => handed.nack(a, r) } satisfies PersistentEvent);
          }
        },
      };
    },
    ensurePersistentGroup: (group, options) => stored.ensurePersistentGroup(group, options),
    replayParked: (group) => stored.replayParked(group),
    headPosition: () => stored.headPosition(),
    groupCheckpoint: (group) => stored.groupCheckpoint(group),
    rewriteUnchained: (stream, rewrite) => stored.rewriteUnchained(stream, rewrite),
    async close() {
      await onClose?.();
      await stored.close();
    },
  };
}

/** The workspace and object of a record's event, which may hold personal values; null for any other event. */
function recordScope(data: Record<string, unknown>): { workspaceId: string; object: string } | null {
  const workspaceId = data['workspaceId'];
  const object = data['object'];
  if (typeof workspaceId !== 'string' || typeof object !== 'string' || recordIdOf(data) === null) return null;
  return { workspaceId, object };
}

/** The store underneath (ciphertext as stored), or the store itself when it seals nothing. */
export function storedEvents(events: EventStore): EventStore {
  return (events as Partial<PrivateEventStore>).stored ?? events;
}


import type { EventMetadata, RecordedEvent } from '../src/eventstore/port.js';
import { comparePositions, type Position } from '../src/eventstore/position.js';
import { RECORD_STREAM_PREFIX, upcast, type RecordEvent } from '../src/events/records.js';
import { filterKey } from '../src/schema/filterKey.js';
import { RECORDS_PROJECTION, type ReadStore, type Values } from '../src/readstore/port.js';
import { initialRollups, lookups, rollups } from '../src/schema/calculated.js';
import type { Projection } from './projection.js';

/**
 * Roll-ups as changes of their record (PRODUCT.md "Roll-ups"): for every parent whose children
 * changed in a batch (an invoice of its lines, a client of its invoices, a playbook or step of its
 * tasks, a template of its steps and tasks), the roll-ups are computed from the records read
 * model and handed to `setRollups`, which appends RecordRollupsChanged to the parent's own stream
 * when they differ from the last recorded ones, with the source and correlation of the change
 * that caused it (its causation is that event). The records projection applies that event like
 * any other change of the record (updatedAt moves) and the dispatcher sends `<object>.updated`.
 * Cascades follow by themselves: an invoice's RecordRollupsChanged is a change of a child of its
 * client. A replayed batch decides on the parent's stream, which holds the first reaction: no-op.
 * Lookups (contacts.clientHealth) are recorded the same way on each record that links the changed one.
 */

export const ROLLUPS_REACTOR = 'rollups';

export interface RollupReactorDeps {
  readStore: ReadStore;
  setRollups(target: Ref, rollups: Values, initial: Values, metadata: EventMetadata): Promise<Position | null>;
}

interface Ref {
  workspaceId: string;
  object: string;
  recordId: string;
}

/** How long to wait for the records projection before looking again (children come from it). */
const PROJECTION_WAIT_MS = 5_000;

export function rollupReactor(deps: RollupReactorDeps): Projection {
  return {
    name: ROLLUPS_REACTOR,
    version: 1,
    kind: 'reactor',
    filter: { streamPrefixes: [RECORD_STREAM_PREFIX] },
    awaited: (events) => events.some(mayBeAwaited),
    async apply() {
      // Nothing to project: the roll-up events are appended by `react`, before the checkpoint.
    },
    async react(events, stopped): Promise<Position | null> {
      const dirty = new Map<string, { ref: Ref; cause: RecordedEvent }>();
      let appended: Position | null = null;
      const set = async (ref: Ref, values: Values, initial: Values, cause: RecordedEvent) => {
        const position = await deps.setRollups(ref, values, initial, metadataOf(cause));
        if (position && (!appended || comparePositions(position, appended) > 0)) appended = position;
      };
      const last = events.at(-1)!.position;
      while (!(await deps.readStore.waitForCheckpoint(RECORDS_PROJECTION, last, PROJECTION_WAIT_MS))) if (stopped()) return null;
      for (const event of events) {
        const recordEvent = upcast(event);
        if (recordEvent) await markParents(deps.readStore, recordEvent, event, dirty);
      }
      for (const { ref, cause } of dirty.values()) {
        if (stopped()) return appended;
        await set(ref, await computeRollups(deps.readStore, ref), initialRollups(ref.object), cause);
      }
      for (const event of events) {
        const recordEvent = upcast(event);
        if (!recordEvent || recordEvent.type !== 'RecordUpdated') continue;
        for (const { ref, values, initial } of await lookupChanges(deps.readStore, recordEvent)) {
          if (stopped()) return appended;
          await set(ref, values, initial, event);
        }
      }
      return appended;
    },
  };
}

/**
 * Whether a writer may wait for this reactor to pass the event. Read your writes waits for it at
 * a write that feeds roll-ups (`feedsRollups` of the values sent and of those held before: an
 * object others roll up, or a looked-up value), and at the roll-up changes appended on the way up.
 * The values held before are not in the event: only a create that sets no looked-up value of an
 * object that nothing rolls up, and events of objects that feed nothing, are surely not waited for.
 */
export function mayBeAwaited(event: RecordedEvent): boolean {
  if (event.type === 'RecordRollupsChanged') return true;
  const object = event.data['object'];
  if (rollups.some((rollup) => rollup.source === object)) return true;
  const looked = lookups.filter((lookup) => lookup.target === object);
  if (looked.length === 0) return false;
  const fields = event.data['fields'];
  if (event.type !== 'RecordCreated' || typeof fields !== 'object' || fields === null) return true;
  return looked.some((lookup) => lookup.take in fields);
}

/** The parents (old and new link targets) whose roll-ups depend on the record this event changed. */
async function markParents(readStore: ReadStore, recordEvent: RecordEvent, event: RecordedEvent, dirty: Map<string, { ref: Ref; cause: RecordedEvent }>): Promise<void> {
  const { workspaceId, object, recordId } = recordEvent.data;
  const relevant = rollups.filter((rollup) => rollup.source === object);
  if (relevant.length === 0) return;
  const links: Values[] = [];
  if (recordEvent.type === 'RecordCreated' || recordEvent.type === 'RecordDeleted') links.push(recordEvent.data.fields);
  if (recordEvent.type === 'RecordUpdated') {
    for (const side of ['from', 'to'] as const) {
      links.push(Object.fromEntries(Object.entries(recordEvent.data.changes).map(([key, change]) => [key, change[side]])));
    }
  }
  // The link as it is now (an update that does not change it, or a roll-up change of the child).
  if (recordEvent.type === 'RecordUpdated' || recordEvent.type === 'RecordRollupsChanged') {
    const current = await readStore.get(workspaceId, object, recordId);
    if (current) links.push(current.fields);
  }
  for (const rollup of relevant) {
    for (const fields of links) {
      const parentId = fields[rollup.via];
      if (typeof parentId === 'string') dirty.set(`${workspaceId}/${rollup.object}/${parentId}`, { ref: { workspaceId, object: rollup.object, recordId: parentId }, cause: event });
    }
  }
}

/**
 * Lookups stored as roll-ups (contacts.clientHealth is the linked client's health): a change of
 * the value looked up is a change of every record that links to it.
 */
async function lookupChanges(readStore: ReadStore, recordEvent: Extract<RecordEvent, { type: 'RecordUpdated' }>): Promise<{ ref: Ref; values: Values; initial: Values }[]> {
  const { workspaceId, object, recordId, changes } = recordEvent.data;
  const found: { ref: Ref; values: Values; initial: Values }[] = [];
  for (const lookup of lookups) {
    const change = changes[lookup.take];
    if (!change || lookup.target !== object) continue;
    const filters = [{ field: lookup.via, value: filterKey(recordId) }];
    const linking = await readStore.find({ workspaceId, object: lookup.object, filters, limit: Number.MAX_SAFE_INTEGER, offset: 0 });
    for (const document of linking.documents) {
      found.push({ ref: { workspaceId, object: lookup.object, recordId: document.id }, values: { [lookup.field]: change.to }, initial: { [lookup.field]: change.from } });
    }
  }
  return found;
}

async function computeRollups(readStore: ReadStore, ref: Ref): Promise<Values> {
  const values: Values = {};
  for (const rollup of rollups) {
    if (rollup.object !== ref.object) continue;
    const filters = [{ field: rollup.via, value: filterKey(ref.recordId) }];
    const children = await readStore.find({ workspaceId: ref.workspaceId, object: rollup.source, filters, limit: Number.MAX_SAFE_INTEGER, offset: 0 });
    values[rollup.field] = rollup.compute(children.documents.map((child) => ({ ...child.fields, ...child.calculated })));
  }
  return values;
}

/** The reaction carries who and what caused it; it is one event of its own, never a bulk member. */
function metadataOf(cause: RecordedEvent): EventMetadata {
  const { source, actor, actionId, correlationId } = cause.metadata;
  return { source, actor, actionId, correlationId, causationId: cause.id };
}

import type { RecordedEvent } from '../src/eventstore/port.js';
import { filterKey } from '../src/readstore/filterKey.js';
import { RECORDS_PROJECTION, type ReadTransaction, type RecordDocument, type Values } from '../src/readstore/port.js';
import { getObject, recordName } from '../src/schema/catalogue.js';
import { RECORD_STREAM_PREFIX, upcast, type RecordEvent } from '../src/events/records.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import type { Projection } from './projection.js';

/**
 * The records read model: one document per live record, with its calculated values. Roll-ups
 * (a parent's values computed from its children, e.g. billing.subtotal from invoice lines) are
 * recomputed once per batch for every parent whose children changed, and cascade upwards
 * (invoice line -> invoice -> client's open balance).
 */


interface RecordRef {
  workspaceId: string;
  object: string;
  id: string;
}

export const recordProjection: Projection = {
  name: RECORDS_PROJECTION,
  filter: { streamPrefixes: [RECORD_STREAM_PREFIX] },
  async apply(tx, events) {
    const dirty = new Map<string, RecordRef>();
    for (const event of events) {
      const recordEvent = upcast(event);
      if (recordEvent) await applyEvent(tx, event, recordEvent, dirty);
    }
    await recomputeRollups(tx, dirty);
  },
};

async function applyEvent(tx: ReadTransaction, event: RecordedEvent, recordEvent: RecordEvent, dirty: Map<string, RecordRef>): Promise<void> {
  const { workspaceId, object, recordId } = recordEvent.data;
  const existing = await tx.get(workspaceId, object, recordId);
  if (existing && existing.revision >= event.revision) return;
  const at = event.created.toISOString();

  let next: RecordDocument | null;
  switch (recordEvent.type) {
    case 'RecordCreated':
      next = {
        workspaceId,
        object,
        id: recordId,
        name: null,
        fields: { ...recordEvent.data.fields },
        calculated: {},
        createdAt: at,
        updatedAt: at,
        createdPosition: event.position,
        revision: event.revision,
      };
      break;
    case 'RecordUpdated': {
      if (!existing) return;
      const fields = { ...existing.fields };
      for (const [key, change] of Object.entries(recordEvent.data.changes)) {
        if (change.to === null) delete fields[key];
        else fields[key] = change.to;
      }
      next = { ...existing, fields, updatedAt: at, revision: event.revision };
      break;
    }
    case 'RecordDeleted':
      next = null;
      await tx.delete(workspaceId, object, recordId);
      break;
  }

  if (next) {
    next.name = nameOf(next);
    next.calculated = calculate(object, next.fields, existing?.calculated ?? {});
    await tx.put(next);
  }
  markParents(dirty, workspaceId, object, existing?.fields, next?.fields);
}

function nameOf(document: RecordDocument): string | null {
  const def = getObject(document.workspaceId, document.object);
  return def ? recordName(def, document.fields) : null;
}

/** Own formulas over the fields and the roll-ups the document already holds. */
function calculate(object: string, fields: Values, previous: Values): Values {
  const rolledUp: Values = {};
  for (const rollup of rollups) {
    if (rollup.object === object) rolledUp[rollup.field] = previous[rollup.field] ?? null;
  }
  return { ...rolledUp, ...ownCalculations(object, { ...fields, ...rolledUp }) };
}

/** Parents (old and new link targets) whose roll-ups depend on this record. */
function markParents(dirty: Map<string, RecordRef>, workspaceId: string, object: string, ...versions: (Values | undefined)[]): void {
  for (const rollup of rollups) {
    if (rollup.source !== object) continue;
    for (const fields of versions) {
      const parentId = fields?.[rollup.via];
      if (typeof parentId === 'string') dirty.set(`${workspaceId}/${rollup.object}/${parentId}`, { workspaceId, object: rollup.object, id: parentId });
    }
  }
}

async function recomputeRollups(tx: ReadTransaction, dirty: Map<string, RecordRef>): Promise<void> {
  while (dirty.size > 0) {
    const [key, ref] = dirty.entries().next().value as [string, RecordRef];
    dirty.delete(key);
    const document = await tx.get(ref.workspaceId, ref.object, ref.id);
    if (!document) continue;
    const rolledUp: Values = {};
    for (const rollup of rollups) {
      if (rollup.object !== ref.object) continue;
      const children = await tx.findAll(ref.workspaceId, rollup.source, [{ field: rollup.via, value: filterKey(ref.id) }]);
      rolledUp[rollup.field] = rollup.compute(children.map((child) => ({ ...child.fields, ...child.calculated })));
    }
    const calculated = { ...rolledUp, ...ownCalculations(ref.object, { ...document.fields, ...rolledUp }) };
    if (JSON.stringify(calculated) === JSON.stringify(document.calculated)) continue;
    // A roll-up is not a change of the record itself: updatedAt and revision stay.
    await tx.put({ ...document, calculated });
    markParents(dirty, ref.workspaceId, ref.object, document.fields);
  }
}

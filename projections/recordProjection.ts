import type { RecordedEvent } from '../src/eventstore/port.js';
import { RECORDS_PROJECTION, type ReadTransaction, type Values } from '../src/readstore/port.js';
import { getObject, recordName } from '../src/schema/catalogue.js';
import { RECORD_STREAM_PREFIX, upcast, type RecordEvent } from '../src/events/records.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import type { Projection } from './projection.js';

/**
 * The records read model: one document per live record, with its calculated values. Roll-ups
 * (a parent's values computed from its children, e.g. billing.subtotal from invoice lines) come
 * from the parent's own RecordRollupsChanged events, appended by the roll-up reactor
 * (rollupReactor.ts): a roll-up change moves the record's updatedAt like any change of it.
 */

export const recordProjection: Projection = {
  name: RECORDS_PROJECTION,
  filter: { streamPrefixes: [RECORD_STREAM_PREFIX] },
  async apply(tx, events) {
    for (const event of events) {
      const recordEvent = upcast(event);
      if (recordEvent) await applyEvent(tx, event, recordEvent);
    }
  },
};

async function applyEvent(tx: ReadTransaction, event: RecordedEvent, recordEvent: RecordEvent): Promise<void> {
  const { workspaceId, object, recordId } = recordEvent.data;
  const existing = await tx.get(workspaceId, object, recordId);
  if (existing && existing.revision >= event.revision) return;
  const at = event.created.toISOString();

  switch (recordEvent.type) {
    case 'RecordCreated': {
      const fields = { ...recordEvent.data.fields };
      await tx.put({
        workspaceId,
        object,
        id: recordId,
        name: nameOf(workspaceId, object, fields),
        fields,
        calculated: calculate(object, fields, {}),
        createdAt: at,
        updatedAt: at,
        createdPosition: event.position,
        revision: event.revision,
      });
      return;
    }
    case 'RecordUpdated': {
      if (!existing) return;
      const fields = { ...existing.fields };
      for (const [key, change] of Object.entries(recordEvent.data.changes)) {
        if (change.to === null) delete fields[key];
        else fields[key] = change.to;
      }
      const calculated = calculate(object, fields, existing.calculated);
      await tx.put({ ...existing, name: nameOf(workspaceId, object, fields), fields, calculated, updatedAt: at, revision: event.revision });
      return;
    }
    case 'RecordRollupsChanged': {
      if (!existing) return;
      const calculated = calculate(object, existing.fields, recordEvent.data.rollups);
      await tx.put({ ...existing, calculated, updatedAt: at, revision: event.revision });
      return;
    }
    case 'RecordDeleted':
      await tx.delete(workspaceId, object, recordId);
      return;
  }
}

function nameOf(workspaceId: string, object: string, fields: Values): string | null {
  const def = getObject(workspaceId, object);
  return def ? recordName(def, fields) : null;
}

/** Own formulas over the fields and the roll-ups known (those of `rolledUp`, else over no children). */
function calculate(object: string, fields: Values, rolledUp: Values): Values {
  const known: Values = {};
  for (const rollup of rollups) {
    if (rollup.object === object) known[rollup.field] = rolledUp[rollup.field] ?? null;
  }
  return { ...known, ...ownCalculations(object, { ...fields, ...known }) };
}

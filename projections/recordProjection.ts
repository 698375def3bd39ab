import type { RecordedEvent } from '../src/eventstore/port.js';
import { RECORDS_PROJECTION, type LinkEdge, type ReadTransaction, type RecordDocument, type Values } from '../src/readstore/port.js';
import { recordName } from '../src/schema/catalogue.js';
import type { Catalogues } from '../src/setup/catalogues.js';
import { RECORD_STREAM_PREFIX, upcast, type RecordEvent } from '../src/events/records.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import { renderTemplate } from '../src/readstore/rendering.js';
import type { ObjectDef } from '../src/schema/types.js';
import type { Follower, Projection } from './projection.js';

/**
 * The records read model: one document per live record, with its calculated values. Roll-ups
 * (a parent's values computed from its children, e.g. billing.subtotal from invoice lines) come
 * from the parent's own RecordRollupsChanged events, appended by the roll-up reactor
 * (rollupReactor.ts): a roll-up change moves the record's updatedAt like any change of it.
 */


/**
 * The catalogues give each record its name fields; a workspace-defined object created after the
 * catalogue was read is found by reading the schema again (it precedes its records in the log).
 */
export function recordProjection(catalogues: Catalogues): Projection {
  return {
    ...recordsFollower(),
    async apply(tx, events) {
      await readAhead(tx, events);
      const edges: LinkEdge[] = [];
      for (const event of events) {
        const recordEvent = upcast(event);
        if (recordEvent) await applyEvent(tx, event, recordEvent, catalogues, edges);
      }
      if (edges.length > 0) await tx.addLinks(edges);
    },
  };
}

/**
 * The version of what this projection builds: raise it when a release changes the documents it
 * writes, and the projector rebuilds the read model in the background (projections/versions.ts).
 * An object so that a test can play a release that raised it.
 */
export const RECORDS_VERSION = { current: 2 };

/** The records projection's entry in the registry of followers (registry.ts), at its current version. */
export function recordsFollower(): Follower & Pick<Projection, 'kind' | 'version'> {
  return { name: RECORDS_PROJECTION, version: RECORDS_VERSION.current, kind: 'read-model', filter: { streamPrefixes: [RECORD_STREAM_PREFIX] } };
}

async function applyEvent(
  tx: ReadTransaction,
  event: RecordedEvent,
  recordEvent: RecordEvent,
  catalogues: Catalogues,
  edges: LinkEdge[],
): Promise<void> {
  const { workspaceId, object, recordId } = recordEvent.data;
  const existing = await tx.get(workspaceId, object, recordId);
  if (existing && existing.revision >= event.revision) return;
  const at = event.created.toISOString();

  let next: RecordDocument | null;
  let rolledUp = existing?.calculated ?? {};
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
    case 'RecordRollupsChanged':
      if (!existing) return;
      next = { ...existing, updatedAt: at, revision: event.revision };
      rolledUp = recordEvent.data.rollups;
      break;
    case 'RecordDeleted':
      next = null;
      await tx.delete(workspaceId, object, recordId);
      break;
  }

  if (next) {
    const def = await objectDefOf(next, catalogues);
    next.name = def ? recordName(def, next.fields) : null;
    next.calculated = calculate(object, next.fields, rolledUp);
    // The REST JSON, rendered here once rather than on every read (src/readstore/rendering.ts).
    next.rendered = def ? renderTemplate(def, next) : null;
    await tx.put(next);
    linkEdges(edges, next);
  }
}

/**
 * The records the batch changes, read in one call per object where the store reads many at once
 * (the batch overlay keeps them): on a server a round trip per event was most of a batch's time.
 */
async function readAhead(tx: ReadTransaction, events: RecordedEvent[]): Promise<void> {
  if (!tx.getMany) return;
  const wanted = new Map<string, { workspaceId: string; object: string; ids: string[] }>();
  for (const event of events) {
    const recordEvent = upcast(event);
    if (!recordEvent) continue;
    const { workspaceId, object, recordId } = recordEvent.data;
    const key = `${workspaceId}\u0000${object}`;
    let group = wanted.get(key);
    if (!group) wanted.set(key, (group = { workspaceId, object, ids: [] }));
    group.ids.push(recordId);
  }
  for (const { workspaceId, object, ids } of wanted.values()) await tx.getMany(workspaceId, object, ids);
}

/** The links roll-ups follow, remembered for reads as of a past moment (queries/asOf.ts). */
function linkEdges(edges: LinkEdge[], document: RecordDocument): void {
  edges.push(...linkEdgesOf(document.workspaceId, document.object, document.id, document.fields));
}

/** The edges of the roll-up links among `values` (a record's fields, or the new values of an update). */
export function linkEdgesOf(workspaceId: string, object: string, id: string, values: Values): LinkEdge[] {
  const edges: LinkEdge[] = [];
  for (const field of ROLLUP_LINKS.get(object) ?? []) {
    const target = values[field];
    if (typeof target === 'string') edges.push({ workspaceId, object, field, id, target });
  }
  return edges;
}

/** Per child object, the link fields its parents' roll-ups follow. */
const ROLLUP_LINKS = new Map<string, string[]>();
for (const rollup of rollups) {
  const fields = ROLLUP_LINKS.get(rollup.source) ?? [];
  if (!fields.includes(rollup.via)) fields.push(rollup.via);
  ROLLUP_LINKS.set(rollup.source, fields);
}

async function objectDefOf(document: RecordDocument, catalogues: Catalogues): Promise<ObjectDef | undefined> {
  const catalogue = catalogues.peek(document.workspaceId) ?? (await catalogues.get(document.workspaceId));
  return catalogue.object(document.object) ?? (await catalogues.refresh(document.workspaceId)).object(document.object);
}

/** Own formulas over the fields and the roll-ups known (the document's, or those of a RecordRollupsChanged). */
function calculate(object: string, fields: Values, previous: Values): Values {
  const rolledUp: Values = {};
  for (const rollup of rollups) {
    if (rollup.object === object) rolledUp[rollup.field] = previous[rollup.field] ?? null;
  }
  return { ...rolledUp, ...ownCalculations(object, { ...fields, ...rolledUp }) };
}

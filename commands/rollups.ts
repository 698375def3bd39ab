import type { EventMetadata, EventStore } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import type { Values } from '../src/readstore/port.js';
import { defaultObject } from '../src/schema/catalogue.js';
import { executeRecordCommand } from './record/repository.js';

/**
 * Records a record's roll-ups as now computed (by the roll-up reactor): appends
 * RecordRollupsChanged to the record's own stream when they differ from the last recorded ones,
 * on the record's revision (a conflict re-decides on the fresh stream). Null when nothing changed.
 */
export function setRollups(
  events: EventStore,
  target: { workspaceId: string; object: string; recordId: string },
  rollups: Values,
  initial: Values,
  metadata: EventMetadata,
): Promise<Position | null> {
  // Roll-ups and lookups live on default objects only.
  const object = defaultObject(target.object);
  if (!object) return Promise.resolve(null);
  return executeRecordCommand(events, object, target.recordId, () => ({ type: 'SetRollups', ...target, rollups, initial }), metadata);
}

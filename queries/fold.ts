import { upcast } from '../src/events/records.js';
import type { StreamEvent } from '../src/eventstore/port.js';
import type { RecordDocument, Values } from '../src/readstore/port.js';
import { defaultObject, recordName, type ObjectDef } from '../src/schema/catalogue.js';
import { readableData } from './eventView.js';

/**
 * A record's document re-derived from its own events, exactly as the records projection writes
 * it (fields without nulls, times from the log, name), but without calculated values: as-of
 * reads and `csr audit verify` add or compare those themselves. Null when the events leave no
 * live record.
 */

export interface FoldedRecord {
  document: Omit<RecordDocument, 'calculated'> | null;
  /** Revision of the last event folded (-1: none). */
  revision: number;
}

export class RecordFold {
  private workspaceId = '';
  private object = '';
  private id = '';
  private fields: Values | null = null;
  private createdAt = '';
  private updatedAt = '';
  private createdPosition = '';
  revision = -1;

  /** Where the record lives, once its creation has been folded. */
  get address(): { workspaceId: string; object: string; id: string } | null {
    return this.id ? { workspaceId: this.workspaceId, object: this.object, id: this.id } : null;
  }

  /** Events of one stream, in order. */
  add(event: StreamEvent): void {
    // No copy of the event when its data reads as stored: a copy would read every member, the metadata too.
    const data = readableData(event);
    const recordEvent = upcast(data === event.data ? event : { ...event, data });
    if (!recordEvent) return;
    this.revision = event.revision;
    const at = event.created.toISOString();
    switch (recordEvent.type) {
      case 'RecordCreated':
        ({ workspaceId: this.workspaceId, object: this.object, recordId: this.id } = recordEvent.data);
        this.fields = {};
        for (const [key, value] of Object.entries(recordEvent.data.fields)) if (value !== null) this.fields[key] = value;
        this.createdAt = this.updatedAt = at;
        this.createdPosition = event.position;
        break;
      case 'RecordUpdated':
        if (!this.fields) return;
        for (const [key, change] of Object.entries(recordEvent.data.changes)) {
          if (change.to === null) delete this.fields[key];
          else this.fields[key] = change.to;
        }
        this.updatedAt = at;
        break;
      case 'RecordRollupsChanged':
        // A roll-up change is a change of the record (its values are computed by the reader).
        if (this.fields) this.updatedAt = at;
        break;
      case 'RecordDeleted':
        this.fields = null;
        break;
    }
  }

  /** `objectOf`: the workspace's catalogue, for the record's name (default: the default objects only). */
  result(objectOf: (object: string) => ObjectDef | undefined = defaultObject): FoldedRecord {
    if (!this.fields) return { document: null, revision: this.revision };
    const def = objectOf(this.object);
    return {
      revision: this.revision,
      document: {
        workspaceId: this.workspaceId,
        object: this.object,
        id: this.id,
        name: def ? recordName(def, this.fields) : null,
        fields: { ...this.fields },
        createdAt: this.createdAt,
        updatedAt: this.updatedAt,
        createdPosition: this.createdPosition,
        revision: this.revision,
      },
    };
  }
}

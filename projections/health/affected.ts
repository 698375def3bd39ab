import type { RecordEvent } from '../../src/events/records.js';
import type { RecordDocument, StoredValue } from '../../src/readstore/port.js';

/**
 * Which clients' health scores an event may move (pure). `current` is the record as the read
 * model shows it once it has caught up with the event (null when deleted), for links the event
 * itself does not carry (an update of a task's status names no client).
 */

/** Objects whose records enter the score through their `client` link. */
const DIRECT: ReadonlySet<string> = new Set(['billing', 'meetings', 'conversations', 'tasks', 'renewals', 'goals', 'surveys']);

export interface Affected {
  clients: string[];
  /** Records whose `client` must be looked up: a survey's contact, an invoice line's invoice. */
  via: { object: string; id: string }[];
}

function ids(...values: (StoredValue | undefined)[]): string[] {
  return values.filter((value): value is string => typeof value === 'string');
}

/**
 * Whether `affectedBy` looks at the record as the read model shows it: only for updates (and
 * roll-up changes) of records whose links it follows. A client's own updates (its score among
 * them) need no read.
 */
export function readsCurrent(event: RecordEvent): boolean {
  const { object } = event.data;
  if (event.type === 'RecordRollupsChanged') return object === 'billing';
  if (event.type !== 'RecordUpdated') return false;
  return object === 'contacts' || object === 'invoiceLines' || DIRECT.has(object);
}

export function affectedBy(event: RecordEvent, current: RecordDocument | null): Affected {
  const { object, recordId } = event.data;
  // An invoice's balance is a roll-up of its lines, and its overdue state depends on it: that
  // roll-up changing is an input. The other roll-ups (counts, open balance) are not.
  if (event.type === 'RecordRollupsChanged') return { clients: object === 'billing' ? ids(current?.fields['client']) : [], via: [] };
  const before = event.type === 'RecordUpdated' ? event.data.changes : {};
  const fields = event.type === 'RecordUpdated' ? (current?.fields ?? {}) : event.data.fields;
  const from = (key: string) => before[key]?.from;

  if (object === 'clients') {
    // Its own score changes are the reactor's output, not an input. A new client's create carries
    // its first score (nothing can link to it yet); one created without it (an older release) needs one.
    const unscored = event.type === 'RecordCreated' && typeof event.data.fields['healthScore'] !== 'number';
    return { clients: unscored ? [recordId] : [], via: [] };
  }
  if (object === 'contacts') {
    // The surveys of a contact count for the contact's client: moving or deleting it moves them.
    if (event.type === 'RecordDeleted') return { clients: ids(fields['client']), via: [] };
    return { clients: event.type === 'RecordUpdated' && 'client' in before ? ids(from('client'), fields['client']) : [], via: [] };
  }
  if (object === 'invoiceLines') {
    // A line moves its invoice's balance (a roll-up), and so the invoice's overdue state.
    return { clients: [], via: [...new Set(ids(fields['invoice'], from('invoice')))].map((id) => ({ object: 'billing', id })) };
  }
  if (!DIRECT.has(object)) return { clients: [], via: [] };
  return {
    clients: [...new Set(ids(fields['client'], from('client')))],
    via: object === 'surveys' ? [...new Set(ids(fields['contact'], from('contact')))].map((id) => ({ object: 'contacts', id })) : [],
  };
}

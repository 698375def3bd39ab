import type { RecordEvent } from '../../src/events/records.js';
import type { StoredValue, Values } from '../../src/readstore/port.js';
import { daysBetween, isCalendarDate } from '../../src/schema/dates.js';

/**
 * Which playbook templates a client's record event fires, and with which deterministic trigger
 * key (pure). Decisions where the spec is silent:
 * - "When a field changes" fires on updates only (creating a client is its own trigger), when the
 *   field's new stored value equals triggerValue ignoring case (links and people are stored as
 *   ids); an empty triggerValue fires on any change, also to empty. Key: `field:<key>@<revision>`,
 *   the client's stream revision of that change.
 * - "Days before a date" fires once per date value, as soon as the date is from 0 to triggerDays
 *   days ahead of today: when the field is set or changed, or on the daily pass. A date already
 *   past fires nothing. Key: `date:<field>=<date>`; moving the date makes a new instance.
 */

export const TRIGGERS = {
  created: 'When a client is created',
  field: 'When a field changes',
  date: 'Days before a date',
  manual: 'Manually',
} as const;

export interface Template {
  id: string;
  triggerType: string;
  triggerField: string | null;
  triggerValue: string | null;
  triggerDays: number | null;
}

export interface Trigger {
  templateId: string;
  clientId: string;
  trigger: string;
  triggerKey: string;
}

export function templateOf(id: string, fields: Values): Template {
  const text = (value: StoredValue | undefined) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);
  return {
    id,
    triggerType: String(fields['triggerType'] ?? ''),
    triggerField: text(fields['triggerField']),
    triggerValue: text(fields['triggerValue']),
    triggerDays: typeof fields['triggerDays'] === 'number' ? fields['triggerDays'] : null,
  };
}

function trigger(template: Template, clientId: string, instance: string): Trigger {
  return { templateId: template.id, clientId, trigger: template.triggerType, triggerKey: `${template.id}:${clientId}:${instance}` };
}

function matches(value: StoredValue, wanted: string | null): boolean {
  if (wanted === null) return true;
  const values = Array.isArray(value) ? value : [value];
  return values.some((item) => item !== null && String(item).toLowerCase() === wanted.toLowerCase());
}

/** A date trigger's instance for this value of its field, when due today. */
export function dateTrigger(template: Template, clientId: string, value: StoredValue | undefined, today: string): Trigger | null {
  if (template.triggerType !== TRIGGERS.date || template.triggerField === null) return null;
  if (typeof value !== 'string' || !isCalendarDate(value)) return null;
  const ahead = daysBetween(today, value);
  if (ahead === null || ahead < 0 || ahead > Math.max(0, template.triggerDays ?? 0)) return null;
  return trigger(template, clientId, `date:${template.triggerField}=${value}`);
}

/** The triggers a clients event fires among the active templates (`revision`: the event's). */
export function triggersFor(event: RecordEvent, revision: number, templates: Template[], today: string): Trigger[] {
  if (event.data.object !== 'clients' || event.type === 'RecordDeleted') return [];
  const clientId = event.data.recordId;
  const fired: Trigger[] = [];
  for (const template of templates) {
    if (event.type === 'RecordCreated') {
      if (template.triggerType === TRIGGERS.created) fired.push(trigger(template, clientId, 'created'));
      const date = template.triggerField === null ? null : dateTrigger(template, clientId, event.data.fields[template.triggerField], today);
      if (date) fired.push(date);
      continue;
    }
    // Roll-up values (open balance, counts) are calculated: no template triggers on them.
    if (event.type !== 'RecordUpdated') continue;
    const field = template.triggerField;
    if (field === null || !(field in event.data.changes)) continue;
    const to = event.data.changes[field]!.to;
    if (template.triggerType === TRIGGERS.field && matches(to, template.triggerValue)) {
      fired.push(trigger(template, clientId, `field:${field}@${revision}`));
    }
    const date = dateTrigger(template, clientId, to, today);
    if (date) fired.push(date);
  }
  return fired;
}

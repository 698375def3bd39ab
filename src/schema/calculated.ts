import type { StoredValue, Values } from './values.js';
import { addDays, daysBetween } from './dates.js';

/**
 * The calculated values of PRODUCT.md section 3, as pure functions over `Values` (a record's
 * fields merged with the calculated values already known). Three kinds:
 *
 * - roll-ups: a parent's value from its children (the records whose link field `via` points at
 *   it), recomputed by the records projection whenever a child changes;
 * - own calculations: formulas over the record's own fields and its roll-ups, stored by the
 *   projection with the record;
 * - time-dependent ones: computed when a record is read, from the request's date (UTC), so they are
 *   never stale and cannot be filtered on;
 * - lookups: a value taken from a linked record when it is read (contacts.clientHealth).
 *
 * Decisions where the formula table is silent:
 *
 * | value                                 | choice                                                                  |
 * |---------------------------------------|-------------------------------------------------------------------------|
 * | money (amount, subtotal, taxAmount,   | rounded to cents (half away from zero, after removing float noise:     |
 * |   total, balanceDue, openBalance,     |   3 × 33.33 = 99.99, not 99.99000000000001)                             |
 * |   renewals forecast/change,           |                                                                         |
 * |   opportunities forecast)             |                                                                         |
 * | a number input that is missing        | invoiceLines.amount: null without quantity or unitPrice                 |
 * | billing discount, taxRate, amountPaid | missing counts as 0                                                     |
 * | roll-ups not computed yet             | a new parent has no children: subtotal/openBalance/counts are 0, not    |
 * |                                       |   null (ownCalculations returns the roll-up over no children)           |
 * | billing.subtotal − discount < 0       | kept as is (tax and total may then be negative); no clamping            |
 * | billing.dueDate                       | null without issueDate or paymentTerms; Due on receipt = issueDate      |
 * | billing.daysOverdue                   | 0 unless status Sent, balanceDue > 0 and a dueDate before today        |
 * | billing.paymentStatus precedence      | Void; Not sent (Draft, Pending to send); then for Sent: Paid            |
 * |                                       |   (balanceDue <= 0) > Overdue (daysOverdue > 0) > Partially paid        |
 * |                                       |   (amountPaid > 0) > Unpaid; null without a status                      |
 * | clients.openBalance                   | sums balanceDue of Sent invoices as is (an overpaid invoice's negative |
 * |                                       |   balance lowers it)                                                    |
 * | daysToRenewal                         | renewalDate − today in days (negative once past); null without a date   |
 * | tasks.dueStatus                       | Done (status Done, whatever the date); No due date; Overdue (before     |
 * |                                       |   today); Due today; Due this week = due 1 to 6 days after today (the  |
 * |                                       |   7 days starting today); Upcoming = 7 or more days after today         |
 * | playbook(Step) progress               | round(100 × done / count), halves up; 0 without tasks                   |
 * | renewals.forecast                     | (proposedArr if set, else currentArr) × probability / 100; null when    |
 * |                                       |   neither is set or the stage is missing                                |
 * | renewals.change                       | proposedArr − currentArr; null unless both are set                      |
 * | opportunities.forecast                | amount × probability / 100; null without amount                         |
 * | surveys.category                      | null for a score outside its scale (validation refuses those anyway)    |
 * | goals.progress                        | rounded to 2 decimals, clamped to 0–100; null when baseline, target or  |
 * |                                       |   current is missing or target = baseline. A target below the baseline |
 * |                                       |   (a value to reduce) works the same way                                |
 */

export interface Rollup {
  /** The parent object holding the value. */
  object: string;
  field: string;
  /** The child object. */
  source: string;
  /** The child's link field pointing at the parent. */
  via: string;
  /** From the children's fields merged with their calculated values. */
  compute(children: Values[]): StoredValue;
}

export interface Lookup {
  object: string;
  field: string;
  /** The record's link field. */
  via: string;
  /** The field of the linked record that is shown. */
  take: string;
  /** The object `via` links to. */
  target: string;
}

function num(value: StoredValue | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * Rounds half away from zero to `digits` decimals, after trimming binary noise to 15 significant
 * digits (so 2374.8749999999995, meaning 2374.875, rounds up). Never returns -0.
 */
export function roundTo(value: number, digits: number): number {
  const factor = 10 ** digits;
  const scaled = Number((Math.abs(value) * factor).toPrecision(15));
  const rounded = (Math.sign(value) * Math.round(scaled)) / factor;
  return rounded === 0 ? 0 : rounded;
}

export const roundCents = (value: number): number => roundTo(value, 2);

function sumMoney(records: Values[], field: string): number {
  return roundCents(records.reduce((total, record) => total + (num(record[field]) ?? 0), 0));
}

const isDone = (task: Values): boolean => task['status'] === 'Done';

export const rollups: readonly Rollup[] = [
  { object: 'billing', field: 'subtotal', source: 'invoiceLines', via: 'invoice', compute: (lines) => sumMoney(lines, 'amount') },
  {
    object: 'clients',
    field: 'openBalance',
    source: 'billing',
    via: 'client',
    compute: (invoices) => sumMoney(invoices.filter((invoice) => invoice['status'] === 'Sent'), 'balanceDue'),
  },
  { object: 'playbooks', field: 'taskCount', source: 'tasks', via: 'playbook', compute: (tasks) => tasks.length },
  { object: 'playbooks', field: 'doneCount', source: 'tasks', via: 'playbook', compute: (tasks) => tasks.filter(isDone).length },
  { object: 'playbookSteps', field: 'taskCount', source: 'tasks', via: 'step', compute: (tasks) => tasks.length },
  { object: 'playbookSteps', field: 'doneCount', source: 'tasks', via: 'step', compute: (tasks) => tasks.filter(isDone).length },
  { object: 'playbookTemplates', field: 'stepCount', source: 'templateSteps', via: 'template', compute: (steps) => steps.length },
  { object: 'playbookTemplates', field: 'taskCount', source: 'templateTasks', via: 'template', compute: (tasks) => tasks.length },
];

/** An object's roll-ups over no children: what a record has before its first roll-up change. */
export function initialRollups(object: string): Values {
  return Object.fromEntries(rollups.filter((rollup) => rollup.object === object).map((rollup) => [rollup.field, rollup.compute([])]));
}

export const lookups: readonly Lookup[] = [{ object: 'contacts', field: 'clientHealth', via: 'client', take: 'health', target: 'clients' }];

const PAYMENT_TERM_DAYS: ReadonlyMap<string, number> = new Map([
  ['Due on receipt', 0],
  ['Net 15', 15],
  ['Net 30', 30],
  ['Net 45', 45],
  ['Net 60', 60],
]);

const RENEWAL_PROBABILITY: ReadonlyMap<string, number> = new Map([
  ['Upcoming', 50],
  ['Proposal sent', 60],
  ['Negotiation', 75],
  ['Won', 100],
  ['Lost', 0],
]);

const OPPORTUNITY_PROBABILITY: ReadonlyMap<string, number> = new Map([
  ['Identified', 10],
  ['Qualified', 30],
  ['Proposal', 60],
  ['Won', 100],
  ['Lost', 0],
]);

function probabilityOf(table: ReadonlyMap<string, number>, stage: StoredValue | undefined): number | null {
  return typeof stage === 'string' ? (table.get(stage) ?? null) : null;
}

/** The roll-ups of `object` as given in `values`, or over no children when not computed yet. */
function rolledUp(object: string, values: Values): Values {
  const result: Values = {};
  for (const rollup of rollups) {
    if (rollup.object === object) result[rollup.field] = values[rollup.field] ?? rollup.compute([]);
  }
  return result;
}

function progressOf(done: StoredValue | undefined, count: StoredValue | undefined): number {
  const total = num(count) ?? 0;
  return total > 0 ? roundTo((100 * (num(done) ?? 0)) / total, 0) : 0;
}

/**
 * The calculated values that do not depend on today's date, from the record's own fields and the
 * roll-ups already in `values` (roll-ups are returned too, defaulting to the value over no
 * children). Objects without such values give {}.
 */
export function ownCalculations(object: string, values: Values): Values {
  const rollupValues = rolledUp(object, values);
  const all = { ...values, ...rollupValues };
  switch (object) {
    case 'invoiceLines': {
      const quantity = num(all['quantity']);
      const unitPrice = num(all['unitPrice']);
      return { amount: quantity === null || unitPrice === null ? null : roundCents(quantity * unitPrice) };
    }
    case 'billing': {
      const subtotal = num(all['subtotal']) ?? 0;
      const discount = num(all['discount']) ?? 0;
      const taxAmount = roundCents(((subtotal - discount) * (num(all['taxRate']) ?? 0)) / 100);
      const total = roundCents(subtotal - discount + taxAmount);
      const balanceDue = roundCents(total - (num(all['amountPaid']) ?? 0));
      const issueDate = all['issueDate'];
      const termDays = typeof all['paymentTerms'] === 'string' ? PAYMENT_TERM_DAYS.get(all['paymentTerms']) : undefined;
      const dueDate = typeof issueDate === 'string' && termDays !== undefined ? addDays(issueDate, termDays) : null;
      return { ...rollupValues, taxAmount, total, balanceDue, dueDate };
    }
    case 'tasks':
      return { isDone: isDone(all) ? 1 : 0 };
    case 'playbooks':
    case 'playbookSteps':
      return { ...rollupValues, progress: progressOf(all['doneCount'], all['taskCount']) };
    case 'renewals': {
      const probability = probabilityOf(RENEWAL_PROBABILITY, all['stage']);
      const current = num(all['currentArr']);
      const proposed = num(all['proposedArr']);
      const base = proposed ?? current;
      return {
        probability,
        forecast: base === null || probability === null ? null : roundCents((base * probability) / 100),
        change: proposed === null || current === null ? null : roundCents(proposed - current),
      };
    }
    case 'opportunities': {
      const probability = probabilityOf(OPPORTUNITY_PROBABILITY, all['stage']);
      const amount = num(all['amount']);
      return { probability, forecast: amount === null || probability === null ? null : roundCents((amount * probability) / 100) };
    }
    case 'surveys':
      return { category: surveyCategory(all['type'], num(all['score'])) };
    case 'goals':
      return { progress: goalProgress(num(all['baseline']), num(all['target']), num(all['current'])) };
    default:
      return rollupValues;
  }
}

function surveyCategory(type: StoredValue | undefined, score: number | null): string | null {
  if (score === null) return null;
  if (type === 'NPS' && score >= 0 && score <= 10) return score >= 9 ? 'Promoter' : score >= 7 ? 'Passive' : 'Detractor';
  if (type === 'CSAT' && score >= 1 && score <= 5) return score >= 4 ? 'Satisfied' : score >= 3 ? 'Neutral' : 'Dissatisfied';
  return null;
}

function goalProgress(baseline: number | null, target: number | null, current: number | null): number | null {
  if (baseline === null || target === null || current === null || target === baseline) return null;
  const progress = roundTo(((current - baseline) / (target - baseline)) * 100, 2);
  return Math.min(100, Math.max(0, progress));
}

/**
 * The only values timeDependentCalculations reads, for the objects where they are few (absent:
 * it may read any): a stored rendering keeps just these for a read to compute from.
 */
export const timeInputs: Readonly<Record<string, readonly string[]>> = {
  clients: ['renewalDate'],
  renewals: ['renewalDate'],
  tasks: ['status', 'dueDate'],
};

/**
 * The values that depend on today's date (`YYYY-MM-DD`, UTC), computed when a record is read.
 * `values` are the record's fields merged with its stored calculated values. Billing's own
 * calculations are recomputed from them, so the result is consistent even if those are missing;
 * the other objects' date-relative values read only fields, and every record of a list page
 * comes through here.
 */
export function timeDependentCalculations(object: string, values: Values, today: string): Values {
  switch (object) {
    case 'clients':
    case 'renewals': {
      const renewalDate = values['renewalDate'];
      return { daysToRenewal: typeof renewalDate === 'string' ? daysBetween(today, renewalDate) : null };
    }
    case 'billing': {
      const all = { ...values, ...ownCalculations(object, values) };
      const balanceDue = num(all['balanceDue']) ?? 0;
      const dueDate = all['dueDate'];
      const late = all['status'] === 'Sent' && balanceDue > 0 && typeof dueDate === 'string' ? daysBetween(dueDate, today) : null;
      const daysOverdue = late !== null && late > 0 ? late : 0;
      return { daysOverdue, paymentStatus: paymentStatus(all['status'], balanceDue, daysOverdue, num(all['amountPaid']) ?? 0) };
    }
    case 'tasks':
      return { dueStatus: dueStatus(values['status'], values['dueDate'], today) };
    default:
      return {};
  }
}

function paymentStatus(status: StoredValue | undefined, balanceDue: number, daysOverdue: number, amountPaid: number): string | null {
  switch (status) {
    case 'Void':
      return 'Void';
    case 'Draft':
    case 'Pending to send':
      return 'Not sent';
    case 'Sent':
      if (balanceDue <= 0) return 'Paid';
      if (daysOverdue > 0) return 'Overdue';
      return amountPaid > 0 ? 'Partially paid' : 'Unpaid';
    default:
      return null;
  }
}

function dueStatus(status: StoredValue | undefined, dueDate: StoredValue | undefined, today: string): string {
  if (status === 'Done') return 'Done';
  const days = typeof dueDate === 'string' ? daysBetween(today, dueDate) : null;
  if (days === null) return 'No due date';
  if (days < 0) return 'Overdue';
  if (days === 0) return 'Due today';
  return days <= 6 ? 'Due this week' : 'Upcoming';
}

/** How many levels of roll-ups a change of `object` can move (invoiceLines -> billing -> clients: 2). */
export function rollupDepthFrom(object: string, seen: ReadonlySet<string> = new Set()): number {
  let depth = 0;
  for (const rollup of rollups) {
    if (rollup.source !== object || seen.has(rollup.object)) continue;
    depth = Math.max(depth, 1 + rollupDepthFrom(rollup.object, new Set([...seen, object])));
  }
  // A looked-up value is one level (nothing rolls up from contacts).
  if (lookups.some((lookup) => lookup.target === object)) depth = Math.max(depth, 1);
  return depth;
}

/**
 * Whether a write of `object` with these values (sent, or held before) can move a roll-up of
 * another record: it links a parent that rolls it up, or sets a value others look up.
 */
export function feedsRollups(object: string, ...versions: (Values | undefined)[]): boolean {
  return versions.some(
    (values) =>
      values !== undefined &&
      (rollups.some((rollup) => rollup.source === object && typeof values[rollup.via] === 'string') ||
        lookups.some((lookup) => lookup.target === object && lookup.take in values)),
  );
}

import type { StoredValue, Values } from './values.js';
import { daysBetween } from './dates.js';

/**
 * The client health score of PRODUCT.md ("Health score") as a pure function of the client's
 * related records (fields merged with their calculated and date-relative values) and today.
 *
 * Decisions where the formula is silent:
 * - a survey "of the last 180 days" has a date from today − 180 to today; a survey dated after
 *   today does not count yet. Ties on `date` go to the one created last.
 * - engagement looks at Completed meetings whose `start` and conversations whose `date` fall in
 *   today − 60 to today (inclusive; the date part in UTC).
 */

export interface HealthInputs {
  billing: Values[];
  /** The surveys linked to the client directly or through one of its contacts, in creation order. */
  surveys: Values[];
  meetings: Values[];
  conversations: Values[];
  tasks: Values[];
  renewals: Values[];
  goals: Values[];
}

export interface HealthBreakdown {
  billing: number;
  sentiment: number;
  engagement: number;
  work: number;
  renewal: number;
  goals: number;
}

const num = (value: StoredValue | undefined): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const dateOf = (value: StoredValue | undefined): string | null => (typeof value === 'string' ? value.slice(0, 10) : null);

/** Days from `date` (a date or date-time) to today; null without a date. */
function age(value: StoredValue | undefined, today: string): number | null {
  const date = dateOf(value);
  return date === null ? null : daysBetween(date, today);
}

export function healthBreakdown(inputs: HealthInputs, today: string): HealthBreakdown {
  const overdue = inputs.billing.filter((invoice) => invoice['paymentStatus'] === 'Overdue');
  const billing = overdue.some((invoice) => num(invoice['daysOverdue']) > 30) ? 25 : overdue.length > 0 ? 10 : 0;

  let latest: Values | null = null;
  for (const survey of inputs.surveys) {
    const days = age(survey['date'], today);
    if (days === null || days < 0 || days > 180) continue;
    if (latest === null || String(survey['date']) >= String(latest['date'])) latest = survey;
  }
  const category = latest?.['category'];
  const sentiment = category === 'Detractor' || category === 'Dissatisfied' ? 25 : category === 'Passive' || category === 'Neutral' ? 10 : 0;

  const recent = (value: StoredValue | undefined) => {
    const days = age(value, today);
    return days !== null && days >= 0 && days <= 60;
  };
  const engaged =
    inputs.meetings.some((meeting) => meeting['status'] === 'Completed' && recent(meeting['start'])) ||
    inputs.conversations.some((conversation) => recent(conversation['date']));
  const engagement = engaged ? 0 : 15;

  const work = Math.min(20, 5 * inputs.tasks.filter((task) => task['dueStatus'] === 'Overdue').length);

  const renewal = inputs.renewals.some((item) => {
    const days = typeof item['daysToRenewal'] === 'number' ? item['daysToRenewal'] : null;
    return days !== null && days >= 0 && days <= 90 && (item['stage'] === 'Upcoming' || item['stage'] === 'Lost');
  })
    ? 10
    : 0;

  const goals = inputs.goals.some((goal) => goal['status'] === 'At risk' || goal['status'] === 'Missed') ? 10 : 0;
  return { billing, sentiment, engagement, work, renewal, goals };
}

/** 100 minus every deduction, clamped to 0–100. */
export function healthScore(inputs: HealthInputs, today: string): number {
  const deductions = Object.values(healthBreakdown(inputs, today)).reduce((sum, value) => sum + value, 0);
  return Math.max(0, Math.min(100, 100 - deductions));
}

const NOTHING_LINKED: HealthInputs = { billing: [], surveys: [], meetings: [], conversations: [], tasks: [], renewals: [], goals: [] };

/**
 * A new client's score: no record can link to it before it exists, so its first score is the
 * formula on empty inputs, whatever the date. Written in the create itself, it spares every new
 * client a second event (and its projection, webhook and checkpoint) from the reactor.
 */
export function newClientHealthScore(): number {
  // Every deduction that depends on the date needs a linked record: any date gives the same score.
  return healthScore(NOTHING_LINKED, '2000-01-01');
}

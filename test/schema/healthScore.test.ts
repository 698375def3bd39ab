import { describe, expect, it } from 'vitest';
import { healthBreakdown, healthScore, type HealthInputs } from '../../src/schema/healthScore.js';

const TODAY = '2026-06-30';
const none: HealthInputs = { billing: [], surveys: [], meetings: [], conversations: [], tasks: [], renewals: [], goals: [] };
const engaged: HealthInputs = { ...none, conversations: [{ date: '2026-06-01T09:00:00Z' }] };

describe('health score formula (given inputs, when scored, then)', () => {
  it.each<[string, Partial<HealthInputs>, number]>([
    ['engaged, nothing else: 100', {}, 100],
    ['an invoice overdue 30 days: -10', { billing: [{ paymentStatus: 'Overdue', daysOverdue: 30 }] }, 90],
    ['an invoice overdue 31 days: -25', { billing: [{ paymentStatus: 'Overdue', daysOverdue: 31 }, { paymentStatus: 'Overdue', daysOverdue: 2 }] }, 75],
    ['a paid invoice: 0', { billing: [{ paymentStatus: 'Paid', daysOverdue: 0 }] }, 100],
    ['latest survey Detractor: -25', { surveys: [{ date: '2026-06-01', category: 'Promoter' }, { date: '2026-06-02', category: 'Detractor' }] }, 75],
    ['latest survey Passive, older Dissatisfied: -10', { surveys: [{ date: '2026-05-01', category: 'Dissatisfied' }, { date: '2026-06-02', category: 'Passive' }] }, 90],
    ['same date: the one created last wins', { surveys: [{ date: '2026-06-02', category: 'Neutral' }, { date: '2026-06-02', category: 'Satisfied' }] }, 100],
    ['a survey older than 180 days: none', { surveys: [{ date: '2025-12-31', category: 'Detractor' }] }, 100],
    ['a survey of exactly 180 days ago counts', { surveys: [{ date: '2026-01-01', category: 'Detractor' }] }, 75],
    ['3 overdue tasks: -15', { tasks: [{ dueStatus: 'Overdue' }, { dueStatus: 'Overdue' }, { dueStatus: 'Overdue' }, { dueStatus: 'Done' }] }, 85],
    ['6 overdue tasks: at most -20', { tasks: Array.from({ length: 6 }, () => ({ dueStatus: 'Overdue' })) }, 80],
    ['renewal Upcoming in 90 days: -10', { renewals: [{ daysToRenewal: 90, stage: 'Upcoming' }] }, 90],
    ['renewal Lost today: -10', { renewals: [{ daysToRenewal: 0, stage: 'Lost' }] }, 90],
    ['renewal past or in 91 days, or Won: 0', { renewals: [{ daysToRenewal: -1, stage: 'Lost' }, { daysToRenewal: 91, stage: 'Upcoming' }, { daysToRenewal: 5, stage: 'Won' }] }, 100],
    ['a goal Missed: -10', { goals: [{ status: 'On track' }, { status: 'Missed' }] }, 90],
  ])('%s', (_, given, expected) => {
    expect(healthScore({ ...engaged, ...given }, TODAY)).toBe(expected);
  });

  it('engagement: 15 without a Completed meeting or a conversation of the last 60 days', () => {
    expect(healthBreakdown(none, TODAY).engagement).toBe(15);
    expect(healthBreakdown({ ...none, meetings: [{ status: 'Completed', start: '2026-05-01T10:00:00Z' }] }, TODAY).engagement).toBe(0);
    expect(healthBreakdown({ ...none, meetings: [{ status: 'Scheduled', start: '2026-06-29T10:00:00Z' }] }, TODAY).engagement).toBe(15);
    expect(healthBreakdown({ ...none, conversations: [{ date: '2026-04-30T23:00:00Z' }] }, TODAY).engagement).toBe(15);
  });

  it('clamps at 0', () => {
    const worst: HealthInputs = {
      ...none,
      billing: [{ paymentStatus: 'Overdue', daysOverdue: 99 }],
      surveys: [{ date: TODAY, category: 'Detractor' }],
      tasks: Array.from({ length: 4 }, () => ({ dueStatus: 'Overdue' })),
      renewals: [{ daysToRenewal: 3, stage: 'Upcoming' }],
      goals: [{ status: 'At risk' }],
    };
    expect(healthScore(worst, TODAY)).toBe(0);
  });
});

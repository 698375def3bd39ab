import { describe, expect, it } from 'vitest';
import { lookups, ownCalculations, rollups, roundTo, timeDependentCalculations, timeInputs } from '../../src/schema/calculated.js';
import type { Values } from '../../src/readstore/port.js';
import { defaultObject } from '../../src/schema/catalogue.js';
import { DEFAULT_OBJECTS } from '../../src/schema/defaultObjects.js';

/** PRODUCT.md section 3, calculated values: every formula row with its edge cases. */

const rollup = (object: string, field: string) => rollups.find((candidate) => candidate.object === object && candidate.field === field)!;
const TODAY = '2024-06-15';

describe('roundTo', () => {
  it.each([
    [23.74875, 2, 23.75],
    [1.005, 2, 1.01],
    [2.675, 2, 2.68],
    [-1.005, 2, -1.01],
    [99.99000000000001, 2, 99.99],
    [0.1 + 0.2, 2, 0.3],
    [-0.001, 2, 0],
    [66.66666666666667, 0, 67],
    [12.5, 0, 13],
  ])('roundTo(%d, %i) is %d', (value, digits, rounded) => {
    expect(Object.is(roundTo(value, digits), rounded)).toBe(true);
  });
});

describe('roll-ups', () => {
  it('cover exactly the roll-up rows of the formula table', () => {
    expect(rollups.map(({ object, field, source, via }) => `${object}.${field} <- ${source}.${via}`)).toEqual([
      'billing.subtotal <- invoiceLines.invoice',
      'clients.openBalance <- billing.client',
      'playbooks.taskCount <- tasks.playbook',
      'playbooks.doneCount <- tasks.playbook',
      'playbookSteps.taskCount <- tasks.step',
      'playbookSteps.doneCount <- tasks.step',
      'playbookTemplates.stepCount <- templateSteps.template',
      'playbookTemplates.taskCount <- templateTasks.template',
    ]);
  });

  it('name calculated fields of the parent and link fields of the child to the parent', () => {
    for (const { object, field, source, via } of rollups) {
      expect(defaultObject(object)!.fields.find((candidate) => candidate.key === field)?.format).toEqual({ type: 'calculated', timeDependent: false });
      expect(defaultObject(source)!.fields.find((candidate) => candidate.key === via)?.format).toEqual({ type: 'link', object });
    }
  });

  it.each([
    { name: 'subtotal sums line amounts', rollup: ['billing', 'subtotal'], children: [{ amount: 99.99 }, { amount: 100 }], then: 199.99 },
    { name: 'subtotal without lines is 0', rollup: ['billing', 'subtotal'], children: [], then: 0 },
    { name: 'subtotal has no float noise', rollup: ['billing', 'subtotal'], children: [{ amount: 0.1 }, { amount: 0.2 }], then: 0.3 },
    { name: 'subtotal counts a line without amount as 0', rollup: ['billing', 'subtotal'], children: [{ amount: null }, { amount: 5 }], then: 5 },
    {
      name: 'open balance sums balanceDue of Sent invoices only',
      rollup: ['clients', 'openBalance'],
      children: [
        { status: 'Sent', balanceDue: 163.74 },
        { status: 'Sent', balanceDue: 0.01 },
        { status: 'Draft', balanceDue: 1000 },
        { status: 'Void', balanceDue: 1000 },
        { status: 'Pending to send', balanceDue: 1000 },
      ],
      then: 163.75,
    },
    { name: 'open balance without invoices is 0', rollup: ['clients', 'openBalance'], children: [], then: 0 },
    { name: 'an overpaid Sent invoice lowers the open balance', rollup: ['clients', 'openBalance'], children: [{ status: 'Sent', balanceDue: 100 }, { status: 'Sent', balanceDue: -20 }], then: 80 },
    { name: 'playbook task count', rollup: ['playbooks', 'taskCount'], children: [{ status: 'Done' }, { status: 'Waiting' }, { status: 'Done' }], then: 3 },
    { name: 'playbook done count', rollup: ['playbooks', 'doneCount'], children: [{ status: 'Done' }, { status: 'Waiting' }, { status: 'Done' }], then: 2 },
    { name: 'step task count', rollup: ['playbookSteps', 'taskCount'], children: [{ status: 'In progress' }], then: 1 },
    { name: 'step done count', rollup: ['playbookSteps', 'doneCount'], children: [{ status: 'In progress' }], then: 0 },
    { name: 'template step count', rollup: ['playbookTemplates', 'stepCount'], children: [{}, {}], then: 2 },
    { name: 'template task count', rollup: ['playbookTemplates', 'taskCount'], children: [], then: 0 },
  ])('$name', ({ rollup: [object, field], children, then }) => {
    expect(rollup(object!, field!).compute(children as Values[])).toBe(then);
  });
});

describe('ownCalculations', () => {
  it.each([
    { name: 'invoice line amount', object: 'invoiceLines', given: { quantity: 3, unitPrice: 33.33 }, then: { amount: 99.99 } },
    { name: 'invoice line amount rounds to cents', object: 'invoiceLines', given: { quantity: 1.5, unitPrice: 10.333 }, then: { amount: 15.5 } },
    { name: 'invoice line amount without quantity', object: 'invoiceLines', given: { unitPrice: 10 }, then: { amount: null } },
    { name: 'invoice line amount without unit price', object: 'invoiceLines', given: { quantity: 2, unitPrice: null }, then: { amount: null } },
    { name: 'task done', object: 'tasks', given: { status: 'Done' }, then: { isDone: 1 } },
    { name: 'task not done', object: 'tasks', given: { status: 'Waiting' }, then: { isDone: 0 } },
    { name: 'task without status', object: 'tasks', given: {}, then: { isDone: 0 } },
    { name: 'contacts have no stored calculation (clientHealth is a lookup)', object: 'contacts', given: { firstName: 'A' }, then: {} },
    { name: 'objects without formulas', object: 'meetings', given: { title: 'M' }, then: {} },
    { name: 'unknown objects', object: 'unicorns', given: { x: 1 }, then: {} },
    { name: 'client open balance kept', object: 'clients', given: { name: 'A', openBalance: 12.5 }, then: { openBalance: 12.5 } },
    { name: 'new client: open balance over no invoices', object: 'clients', given: { name: 'A' }, then: { openBalance: 0 } },
    { name: 'new client: open balance null means not computed yet', object: 'clients', given: { name: 'A', openBalance: null }, then: { openBalance: 0 } },
    { name: 'template counts kept', object: 'playbookTemplates', given: { stepCount: 2, taskCount: 5 }, then: { stepCount: 2, taskCount: 5 } },
    { name: 'new template counts', object: 'playbookTemplates', given: {}, then: { stepCount: 0, taskCount: 0 } },
  ])('$name: $given -> $then', ({ object, given, then }) => {
    expect(ownCalculations(object, given as Values)).toEqual(then);
  });

  describe('billing', () => {
    const bill = (given: Values) => ownCalculations('billing', given);

    it('the example of the API suite: discount, tax rounded to cents, payment, terms', () => {
      expect(bill({ subtotal: 199.99, discount: 10, taxRate: 12.5, amountPaid: 50, issueDate: '2024-01-01', paymentTerms: 'Net 30' })).toEqual({
        subtotal: 199.99,
        taxAmount: 23.75, // (199.99 − 10) × 12.5% = 23.74875
        total: 213.74,
        balanceDue: 163.74,
        dueDate: '2024-01-31',
      });
    });

    it.each([
      { name: 'no lines, nothing else', given: {}, then: { subtotal: 0, taxAmount: 0, total: 0, balanceDue: 0, dueDate: null } },
      { name: 'no discount, no tax', given: { subtotal: 100 }, then: { subtotal: 100, taxAmount: 0, total: 100, balanceDue: 100, dueDate: null } },
      { name: 'tax rounds half up to cents', given: { subtotal: 10.1, taxRate: 5 }, then: { subtotal: 10.1, taxAmount: 0.51, total: 10.61, balanceDue: 10.61, dueDate: null } },
      { name: 'no float noise in totals', given: { subtotal: 0.3, discount: 0.1, amountPaid: 0.1 }, then: { subtotal: 0.3, taxAmount: 0, total: 0.2, balanceDue: 0.1, dueDate: null } },
      { name: 'overpaid', given: { subtotal: 100, amountPaid: 120 }, then: { subtotal: 100, taxAmount: 0, total: 100, balanceDue: -20, dueDate: null } },
      { name: 'discount above subtotal is kept', given: { subtotal: 50, discount: 60, taxRate: 10 }, then: { subtotal: 50, taxAmount: -1, total: -11, balanceDue: -11, dueDate: null } },
      { name: 'not computed yet', given: { subtotal: null, taxRate: 20 }, then: { subtotal: 0, taxAmount: 0, total: 0, balanceDue: 0, dueDate: null } },
    ])('$name', ({ given, then }) => {
      expect(bill(given as Values)).toEqual(then);
    });

    it.each([
      ['Due on receipt', '2024-02-10', '2024-02-10'],
      ['Net 15', '2024-02-20', '2024-03-06'],
      ['Net 30', '2024-02-01', '2024-03-02'],
      ['Net 45', '2023-12-31', '2024-02-14'],
      ['Net 60', '2024-11-15', '2025-01-14'],
    ])('due date: %s from %s is %s', (paymentTerms, issueDate, dueDate) => {
      expect(bill({ paymentTerms, issueDate }).dueDate).toBe(dueDate);
    });

    it.each([
      { given: { paymentTerms: 'Net 30' } },
      { given: { issueDate: '2024-01-01' } },
      { given: { issueDate: '2024-01-01', paymentTerms: null } },
      { given: { issueDate: null, paymentTerms: 'Net 30' } },
    ])('no due date without issue date and terms: $given', ({ given }) => {
      expect(bill(given as Values).dueDate).toBeNull();
    });
  });

  it.each([
    { given: { taskCount: 3, doneCount: 2 }, then: 67 },
    { given: { taskCount: 2, doneCount: 1 }, then: 50 },
    { given: { taskCount: 8, doneCount: 1 }, then: 13 }, // 12.5 rounds up
    { given: { taskCount: 3, doneCount: 1 }, then: 33 },
    { given: { taskCount: 4, doneCount: 4 }, then: 100 },
    { given: { taskCount: 0, doneCount: 0 }, then: 0 },
    { given: {}, then: 0 },
  ])('playbook and step progress: $given -> $then', ({ given, then }) => {
    for (const object of ['playbooks', 'playbookSteps']) {
      expect(ownCalculations(object, given as Values)).toEqual({ taskCount: given.taskCount ?? 0, doneCount: given.doneCount ?? 0, progress: then });
    }
  });

  it.each([
    { given: { stage: 'Upcoming', currentArr: 1000 }, then: { probability: 50, forecast: 500, change: null } },
    { given: { stage: 'Proposal sent', currentArr: 1000, proposedArr: 1100 }, then: { probability: 60, forecast: 660, change: 100 } },
    { given: { stage: 'Negotiation', currentArr: 1000, proposedArr: 1200 }, then: { probability: 75, forecast: 900, change: 200 } },
    { given: { stage: 'Won', currentArr: 1000, proposedArr: 900 }, then: { probability: 100, forecast: 900, change: -100 } },
    { given: { stage: 'Lost', currentArr: 1000, proposedArr: 1200 }, then: { probability: 0, forecast: 0, change: 200 } },
    { given: { stage: 'Negotiation', proposedArr: 1200 }, then: { probability: 75, forecast: 900, change: null } },
    { given: { stage: 'Negotiation', proposedArr: 0, currentArr: 1000 }, then: { probability: 75, forecast: 0, change: -1000 } },
    { given: { stage: 'Negotiation' }, then: { probability: 75, forecast: null, change: null } },
    { given: { stage: 'Proposal sent', currentArr: 333.33 }, then: { probability: 60, forecast: 200, change: null } },
    { given: { currentArr: 1000 }, then: { probability: null, forecast: null, change: null } },
  ])('renewals: $given -> $then', ({ given, then }) => {
    expect(ownCalculations('renewals', given as Values)).toEqual(then);
  });

  it.each([
    { given: { stage: 'Identified', amount: 1000 }, then: { probability: 10, forecast: 100 } },
    { given: { stage: 'Qualified', amount: 1000 }, then: { probability: 30, forecast: 300 } },
    { given: { stage: 'Proposal', amount: 1000 }, then: { probability: 60, forecast: 600 } },
    { given: { stage: 'Won', amount: 1000 }, then: { probability: 100, forecast: 1000 } },
    { given: { stage: 'Lost', amount: 1000 }, then: { probability: 0, forecast: 0 } },
    { given: { stage: 'Qualified', amount: 0.1 }, then: { probability: 30, forecast: 0.03 } },
    { given: { stage: 'Qualified' }, then: { probability: 30, forecast: null } },
    { given: { amount: 10 }, then: { probability: null, forecast: null } },
  ])('opportunities: $given -> $then', ({ given, then }) => {
    expect(ownCalculations('opportunities', given as Values)).toEqual(then);
  });

  it.each([
    ['NPS', 0, 'Detractor'],
    ['NPS', 6, 'Detractor'],
    ['NPS', 7, 'Passive'],
    ['NPS', 8, 'Passive'],
    ['NPS', 9, 'Promoter'],
    ['NPS', 10, 'Promoter'],
    ['NPS', 11, null],
    ['NPS', -1, null],
    ['CSAT', 1, 'Dissatisfied'],
    ['CSAT', 2, 'Dissatisfied'],
    ['CSAT', 3, 'Neutral'],
    ['CSAT', 4, 'Satisfied'],
    ['CSAT', 5, 'Satisfied'],
    ['CSAT', 0, null],
    ['CSAT', 6, null],
    [null, 5, null],
    ['NPS', null, null],
  ])('surveys: %s score %s is %s', (type, score, category) => {
    expect(ownCalculations('surveys', { type, score })).toEqual({ category });
  });

  it.each([
    { given: { baseline: 10, target: 20, current: 15 }, then: 50 },
    { given: { baseline: 0, target: 3, current: 1 }, then: 33.33 },
    { given: { baseline: 10, target: 20, current: 25 }, then: 100 },
    { given: { baseline: 10, target: 20, current: 5 }, then: 0 },
    { given: { baseline: 10, target: 20, current: 10 }, then: 0 },
    { given: { baseline: 10, target: 20, current: 20 }, then: 100 },
    { given: { baseline: 10, target: 5, current: 7 }, then: 60 }, // a value to reduce
    { given: { baseline: 10, target: 10, current: 12 }, then: null },
    { given: { target: 20, current: 15 }, then: null },
    { given: { baseline: 10, current: 15 }, then: null },
    { given: { baseline: 10, target: 20 }, then: null },
    { given: { baseline: 10, target: 20, current: null }, then: null },
  ])('goals: $given -> progress $then', ({ given, then }) => {
    expect(ownCalculations('goals', given as Values)).toEqual({ progress: then });
  });
});

describe('timeDependentCalculations (today 2024-06-15)', () => {
  it.each([
    { renewalDate: '2024-06-15', then: 0 },
    { renewalDate: '2024-06-16', then: 1 },
    { renewalDate: '2025-06-15', then: 365 },
    { renewalDate: '2024-06-01', then: -14 },
    { renewalDate: null, then: null },
    { renewalDate: undefined, then: null },
  ])('clients and renewals: renewal date $renewalDate -> daysToRenewal $then', ({ renewalDate, then }) => {
    const values: Values = renewalDate === undefined ? {} : { renewalDate };
    expect(timeDependentCalculations('clients', values, TODAY)).toEqual({ daysToRenewal: then });
    expect(timeDependentCalculations('renewals', values, TODAY)).toEqual({ daysToRenewal: then });
  });

  describe('billing', () => {
    // Net 30 from 2024-05-01: due 2024-05-31, 15 days before today.
    const sentLate: Values = { status: 'Sent', subtotal: 100, issueDate: '2024-05-01', paymentTerms: 'Net 30' };
    it.each([
      { name: 'void', given: { ...sentLate, status: 'Void' }, then: { daysOverdue: 0, paymentStatus: 'Void' } },
      { name: 'draft', given: { ...sentLate, status: 'Draft' }, then: { daysOverdue: 0, paymentStatus: 'Not sent' } },
      { name: 'pending to send', given: { ...sentLate, status: 'Pending to send' }, then: { daysOverdue: 0, paymentStatus: 'Not sent' } },
      { name: 'sent, unpaid, past due', given: sentLate, then: { daysOverdue: 15, paymentStatus: 'Overdue' } },
      { name: 'sent, partly paid, past due: Overdue wins', given: { ...sentLate, amountPaid: 40 }, then: { daysOverdue: 15, paymentStatus: 'Overdue' } },
      { name: 'sent, paid in full, past due: Paid wins', given: { ...sentLate, amountPaid: 100 }, then: { daysOverdue: 0, paymentStatus: 'Paid' } },
      { name: 'sent, overpaid', given: { ...sentLate, amountPaid: 150 }, then: { daysOverdue: 0, paymentStatus: 'Paid' } },
      { name: 'sent, due today', given: { ...sentLate, issueDate: '2024-05-16' }, then: { daysOverdue: 0, paymentStatus: 'Unpaid' } },
      { name: 'sent, due yesterday', given: { ...sentLate, issueDate: '2024-05-15' }, then: { daysOverdue: 1, paymentStatus: 'Overdue' } },
      { name: 'sent, partly paid, not due', given: { ...sentLate, issueDate: '2024-06-10', amountPaid: 1 }, then: { daysOverdue: 0, paymentStatus: 'Partially paid' } },
      { name: 'sent, no due date', given: { status: 'Sent', subtotal: 100 }, then: { daysOverdue: 0, paymentStatus: 'Unpaid' } },
      { name: 'sent, nothing to pay', given: { status: 'Sent' }, then: { daysOverdue: 0, paymentStatus: 'Paid' } },
      { name: 'no status', given: { subtotal: 100 }, then: { daysOverdue: 0, paymentStatus: null } },
    ])('$name -> $then', ({ given, then }) => {
      expect(timeDependentCalculations('billing', given, TODAY)).toEqual(then);
    });

    it('uses stored calculated values merged with the fields, as the read side passes them', () => {
      const fields = { status: 'Sent', issueDate: '2024-05-01', paymentTerms: 'Net 30', amountPaid: 50 };
      const calculated = ownCalculations('billing', { ...fields, subtotal: 80 });
      expect(timeDependentCalculations('billing', { ...fields, ...calculated }, TODAY)).toEqual({ daysOverdue: 15, paymentStatus: 'Overdue' });
    });
  });

  it.each([
    { status: 'Done', dueDate: '2024-01-01', then: 'Done' },
    { status: 'Done', dueDate: null, then: 'Done' },
    { status: 'Waiting', dueDate: null, then: 'No due date' },
    { status: 'Waiting', dueDate: '2024-06-14', then: 'Overdue' },
    { status: 'In progress', dueDate: '2023-06-15', then: 'Overdue' },
    { status: 'Not started', dueDate: '2024-06-15', then: 'Due today' },
    { status: 'Not started', dueDate: '2024-06-16', then: 'Due this week' },
    { status: 'Not started', dueDate: '2024-06-21', then: 'Due this week' },
    { status: 'Not started', dueDate: '2024-06-22', then: 'Upcoming' },
    { status: 'Not started', dueDate: '2025-01-01', then: 'Upcoming' },
  ])('tasks: $status due $dueDate -> $then', ({ status, dueDate, then }) => {
    expect(timeDependentCalculations('tasks', { status, dueDate }, TODAY)).toEqual({ dueStatus: then });
  });

  it('other objects have no time-dependent values', () => {
    expect(timeDependentCalculations('goals', { targetDate: '2024-01-01' }, TODAY)).toEqual({});
  });

  it('computes exactly the time-dependent calculated fields of the catalogue', () => {
    const timeDependent: string[] = [];
    for (const object of ['clients', 'renewals', 'billing', 'tasks']) {
      for (const key of Object.keys(timeDependentCalculations(object, {}, TODAY))) timeDependent.push(`${object}.${key}`);
    }
    const catalogue = ['clients', 'renewals', 'billing', 'tasks'].flatMap((object) =>
      defaultObject(object)!.fields.filter((field) => field.format.type === 'calculated' && field.format.timeDependent).map((field) => `${object}.${field.key}`),
    );
    expect(timeDependent.sort()).toEqual(catalogue.sort());
  });

  it('reads only the time inputs it names, for the objects that name them', () => {
    const others: Values = { status: 'Done', dueDate: '2024-06-01', renewalDate: '2024-07-01', stage: 'Won', amount: 5, name: 'x' };
    const cases: Values[] = [{}, { renewalDate: '2024-07-01' }, { status: 'Waiting', dueDate: '2024-06-01' }, { status: 'Done' }, { dueDate: '2024-06-20' }];
    for (const [object, inputs] of Object.entries(timeInputs)) {
      // Values of every other field must change nothing.
      const noise = Object.fromEntries(Object.entries(others).filter(([key]) => !inputs.includes(key)));
      for (const values of cases) {
        const picked = Object.fromEntries(Object.entries(values).filter(([key]) => inputs.includes(key)));
        expect(timeDependentCalculations(object, { ...noise, ...picked }, TODAY), `${object} ${JSON.stringify(values)}`).toEqual(timeDependentCalculations(object, picked, TODAY));
      }
    }
  });
});

describe('lookups', () => {
  it('contacts show the linked client health', () => {
    expect(lookups).toEqual([{ object: 'contacts', field: 'clientHealth', via: 'client', take: 'health', target: 'clients' }]);
  });
});

describe('every stored calculated field of the catalogue is computed', () => {
  it.each(DEFAULT_OBJECTS.map((object) => object.key))('%s (lookups excepted)', (object) => {
    const stored = defaultObject(object)!
      .fields.filter((field) => field.format.type === 'calculated' && !field.format.timeDependent)
      .map((field) => field.key)
      .filter((key) => !lookups.some((lookup) => lookup.object === object && lookup.field === key));
    expect(Object.keys(ownCalculations(object, {})).sort()).toEqual(stored.sort());
  });
});

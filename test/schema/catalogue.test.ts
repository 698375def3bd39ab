import { describe, expect, it } from 'vitest';
import { formatAutoNumber, defaultObject, recordName, uniqueFields } from '../../src/schema/catalogue.js';
import { DEFAULT_OBJECTS } from '../../src/schema/defaultObjects.js';
import type { Values } from '../../src/readstore/port.js';
import type { FieldFormat } from '../../src/schema/types.js';

/**
 * The default object catalogue against spec section 2.3 and PRODUCT.md section 3. The tables below
 * are the spec's rows, copied verbatim; `specFormat` is an independent reading of their wording.
 */

const SPEC_TABLES: Record<string, string[]> = {
  clients: [
    '| clientNumber | no | Auto number |',
    '| name | yes | Text |',
    '| industry | no | Text |',
    '| website | no | Web address |',
    '| tier | no | One of: Enterprise, Mid-Market, SMB |',
    '| health | no | One of: Healthy, At Risk, Critical |',
    '| arr | no | Number (USD) |',
    '| renewalDate | no | Date |',
    '| notes | no | Text |',
    '| owner | no | Person (account owner) |',
    '| daysToRenewal | no | Calculated, RO |',
    '| documents | no | Files, RO |',
    '| openBalance | no | Calculated, RO |',
    '| healthScore | no | Number (read only, see 2.2) |',
  ],
  contacts: [
    '| firstName | yes | Text |',
    '| lastName | no | Text |',
    '| role | no | Text |',
    '| client | no | Link to a client |',
    '| isPrimary | no | Boolean |',
    '| email | no | Email address |',
    '| phone | no | Text |',
    '| notes | no | Text |',
    '| clientHealth | no | Calculated, RO |',
  ],
  billing: [
    '| invoiceNumber | no | Auto number |',
    '| client | yes | Link to a client |',
    '| billingContact | no | Link to a contact |',
    '| status | yes | One of: Draft, Pending to send, Sent, Void |',
    '| paymentStatus | no | Calculated, RO |',
    '| poNumber | no | Text |',
    '| issueDate | no | Date |',
    '| paymentTerms | no | One of: Due on receipt, Net 15, Net 30, Net 45, Net 60 |',
    '| dueDate | no | Calculated, RO |',
    '| daysOverdue | no | Calculated, RO |',
    '| sentDate | no | Date |',
    '| periodStart | no | Date |',
    '| periodEnd | no | Date |',
    '| subtotal | no | Calculated, RO |',
    '| discount | no | Number (USD) |',
    '| taxRate | no | Number, a percentage (12.5 means 12.5%) |',
    '| taxAmount | no | Calculated, RO |',
    '| total | no | Calculated, RO |',
    '| amountPaid | no | Number (USD) |',
    '| balanceDue | no | Calculated, RO |',
    '| paidDate | no | Date |',
    '| paymentMethod | no | One of: Bank transfer, Card, Direct debit, Cheque, Other |',
    '| paymentReference | no | Text |',
    '| billingAddress | no | Text |',
    '| notes | no | Text |',
    '| documents | no | Files, RO |',
  ],
  invoiceLines: [
    '| invoice | yes | Link to an invoice (a billing record) |',
    '| description | yes | Text |',
    '| quantity | yes | Number |',
    '| unitPrice | yes | Number (USD) |',
    '| amount | no | Calculated, RO |',
  ],
  usage: [
    '| number | no | Auto number |',
    '| client | yes | Link to a client |',
    '| metric | yes | Link to a usage metric |',
    '| date | yes | Date |',
    '| value | yes | Number |',
    '| notes | no | Text |',
    '| identifiers | no | Text (user ids) |',
  ],
  usageMetrics: [
    '| name | yes | Text |',
    '| unit | no | Text |',
    '| aggregation | yes | One of: Sum, Average, Maximum, Latest, Unique (how daily values are combined) |',
    '| description | no | Text |',
  ],
  conversations: [
    '| subject | yes | Text |',
    '| client | no | Link to a client |',
    '| contacts | no | Link list of contacts |',
    '| date | yes | Date and time |',
    '| channel | yes | One of: Email, Phone, Video call, Chat, In person |',
    '| direction | no | One of: Inbound, Outbound |',
    '| sentiment | no | One of: Positive, Neutral, Negative |',
    '| owner | no | Person |',
    '| from | no | Text |',
    '| to | no | Text |',
    '| content | no | Text (message or email content) |',
    '| summary | no | Text |',
    '| nextSteps | no | Text |',
  ],
  meetings: [
    '| title | yes | Text |',
    '| client | no | Link to a client |',
    '| contacts | no | Link list of contacts |',
    '| start | yes | Date and time |',
    '| duration | no | Number (minutes) |',
    '| type | no | One of: Kickoff, Check-in, QBR, Training, Escalation, Renewal |',
    '| status | yes | One of: Scheduled, Completed, Cancelled, No-show |',
    '| location | no | Text (location or link) |',
    '| owner | no | Person |',
    '| agenda | no | Text |',
    '| summary | no | Text |',
    '| outcome | no | Text (decisions and next steps) |',
  ],
  tasks: [
    '| subject | yes | Text |',
    '| client | no | Link to a client |',
    '| contacts | no | Link list of contacts |',
    '| dueDate | no | Date |',
    '| status | yes | One of: Not started, In progress, Waiting, Done |',
    '| priority | no | One of: Low, Normal, High, Urgent |',
    '| assignee | no | Person |',
    '| dueStatus | no | Calculated, RO |',
    '| description | no | Text |',
    '| playbook | no | Link to a playbook |',
    '| step | no | Link to a playbook step |',
    '| isDone | no | Calculated, RO (1/0) |',
  ],
  playbooks: [
    '| name | yes | Text |',
    '| client | yes | Link to a client |',
    '| owner | no | Person |',
    '| status | yes | One of: Not started, In progress, On hold, Completed, Cancelled |',
    '| startDate | no | Date |',
    '| targetDate | no | Date |',
    '| taskCount | no | Calculated, RO |',
    '| doneCount | no | Calculated, RO |',
    '| progress | no | Calculated, RO |',
    '| objective | no | Text |',
    '| template | no | Link to a playbook template |',
    '| source | no | Text |',
    '| triggerKey | no | Text |',
  ],
  playbookSteps: [
    '| name | yes | Text |',
    '| playbook | yes | Link to a playbook |',
    '| order | no | Number |',
    '| dueDate | no | Date |',
    '| taskCount | no | Calculated, RO |',
    '| doneCount | no | Calculated, RO |',
    '| progress | no | Calculated, RO |',
    '| description | no | Text |',
  ],
  playbookTemplates: [
    '| name | yes | Text |',
    '| active | no | Boolean |',
    '| triggerType | yes | One of: Manually, When a field changes, Days before a date, When a client is created |',
    '| triggerField | no | Text |',
    '| triggerValue | no | Text |',
    '| triggerDays | no | Number |',
    '| stepCount | no | Calculated, RO |',
    '| taskCount | no | Calculated, RO |',
    '| description | no | Text |',
  ],
  templateSteps: [
    '| name | yes | Text |',
    '| template | yes | Link to a playbook template |',
    '| order | no | Number |',
    '| dueAfterDays | no | Number (days after start) |',
    '| description | no | Text |',
  ],
  templateTasks: [
    '| subject | yes | Text |',
    '| step | yes | Link to a template step |',
    '| template | yes | Link to a playbook template |',
    '| dueAfterDays | no | Number (days after start) |',
    '| priority | no | One of: Low, Normal, High, Urgent |',
    "| assignTo | no | One of: Playbook owner, Client's account owner, Specific user |",
    '| assignee | no | Person (the specific user) |',
    '| description | no | Text |',
  ],
  renewals: [
    '| name | yes | Text |',
    '| client | yes | Link to a client |',
    '| renewalDate | yes | Date |',
    '| stage | yes | One of: Upcoming, Proposal sent, Negotiation, Won, Lost |',
    '| currentArr | no | Number (USD) |',
    '| proposedArr | no | Number (USD) |',
    '| probability | no | Calculated, RO |',
    '| forecast | no | Calculated, RO |',
    '| change | no | Calculated, RO |',
    '| daysToRenewal | no | Calculated, RO |',
    '| owner | no | Person |',
    '| closedDate | no | Date |',
    '| lostReason | no | One of: Budget, Low adoption, Competitor, Champion left, Acquired / closed, Other |',
    '| notes | no | Text |',
  ],
  opportunities: [
    '| name | yes | Text |',
    '| client | yes | Link to a client |',
    '| type | no | One of: Upsell, Cross-sell, More seats, Services |',
    '| stage | yes | One of: Identified, Qualified, Proposal, Won, Lost |',
    '| amount | no | Number (USD) |',
    '| closeDate | no | Date |',
    '| probability | no | Calculated, RO |',
    '| forecast | no | Calculated, RO |',
    '| owner | no | Person |',
    '| description | no | Text |',
  ],
  surveys: [
    '| number | no | Auto number |',
    '| type | yes | One of: NPS, CSAT |',
    '| contact | no | Link to a contact |',
    '| client | no | Link to a client |',
    '| score | yes | Number |',
    '| category | no | Calculated, RO |',
    '| date | yes | Date |',
    '| comment | no | Text |',
  ],
  goals: [
    '| name | yes | Text |',
    '| client | yes | Link to a client |',
    '| status | yes | One of: Not started, On track, At risk, Achieved, Missed |',
    '| metric | no | Text (success measure) |',
    '| baseline | no | Number |',
    '| target | no | Number |',
    '| current | no | Number |',
    '| progress | no | Calculated, RO |',
    '| targetDate | no | Date |',
    '| owner | no | Person |',
    '| description | no | Text |',
  ],
};

const LINK_TARGETS: Record<string, string> = {
  'a client': 'clients',
  'a contact': 'contacts',
  'an invoice (a billing record)': 'billing',
  'a usage metric': 'usageMetrics',
  'a playbook': 'playbooks',
  'a playbook step': 'playbookSteps',
  'a playbook template': 'playbookTemplates',
  'a template step': 'templateSteps',
};
const AUTO_NUMBER_PREFIXES: Record<string, string> = { clients: 'CL-', billing: 'INV-', usage: 'US-', surveys: 'SV-' };
const TIME_DEPENDENT = new Set(['clients.daysToRenewal', 'renewals.daysToRenewal', 'billing.daysOverdue', 'billing.paymentStatus', 'tasks.dueStatus']);

function specFormat(object: string, key: string, text: string): FieldFormat {
  if (text === 'Auto number') return { type: 'autoNumber', prefix: AUTO_NUMBER_PREFIXES[object]! };
  if (text === 'Calculated, RO' || text.startsWith('Calculated, RO (')) return { type: 'calculated', timeDependent: TIME_DEPENDENT.has(`${object}.${key}`) };
  if (text === 'Files, RO') return { type: 'files' };
  if (text.startsWith('Number (read only')) return { type: 'readOnlyNumber' };
  if (text.startsWith('Number (USD)')) return { type: 'number', currency: 'USD' };
  if (text.startsWith('Number')) return { type: 'number' };
  if (text.startsWith('Text')) return { type: 'text' };
  if (text === 'Date and time') return { type: 'dateTime' };
  if (text === 'Date') return { type: 'date' };
  if (text === 'Boolean') return { type: 'boolean' };
  if (text === 'Web address') return { type: 'url' };
  if (text === 'Email address') return { type: 'email' };
  if (text.startsWith('Person')) return { type: 'person' };
  if (text === 'Link list of contacts') return { type: 'linkList', object: 'contacts' };
  if (text.startsWith('Link to ')) return { type: 'link', object: LINK_TARGETS[text.slice('Link to '.length)]! };
  if (text.startsWith('One of: ')) return { type: 'oneOf', values: text.slice('One of: '.length).replace(/ \(.*\)$/, '').split(', ') };
  throw new Error(`unread spec format "${text}"`);
}

function specFields(object: string) {
  return SPEC_TABLES[object]!.map((row) => {
    const [key, required, format] = row.split('|').slice(1, 4).map((cell) => cell.trim()) as [string, string, string];
    return { key, required: required === 'yes', format: specFormat(object, key, format) };
  });
}

const objects = DEFAULT_OBJECTS;

describe('the default catalogue', () => {
  it('has the 18 objects of spec 2.3, in its order', () => {
    expect(objects.map((object) => object.key)).toEqual(Object.keys(SPEC_TABLES));
    expect(objects).toHaveLength(18);
  });

  it.each(Object.keys(SPEC_TABLES))('%s: every field of the spec table, with its required flag and format, in order', (key) => {
    const object = defaultObject(key)!;
    expect(object.fields.map(({ key, required, format }) => ({ key, required, format }))).toEqual(specFields(key));
  });

  it.each([
    ['clients', 14], ['contacts', 9], ['billing', 26], ['invoiceLines', 5], ['usage', 7], ['usageMetrics', 4],
    ['conversations', 13], ['meetings', 12], ['tasks', 12], ['playbooks', 13], ['playbookSteps', 8], ['playbookTemplates', 9],
    ['templateSteps', 5], ['templateTasks', 8], ['renewals', 14], ['opportunities', 10], ['surveys', 8], ['goals', 11],
  ])('%s has %i fields, each with a label and a unique key', (key, count) => {
    const object = defaultObject(key)!;
    expect(object.fields).toHaveLength(count);
    expect(new Set(object.fields.map((field) => field.key)).size).toBe(count);
    for (const field of object.fields) expect(field.label.trim()).not.toBe('');
    expect(object.label.trim()).not.toBe('');
  });

  it.each([
    ['clients', 'website', { type: 'url' }],
    ['clients', 'tier', { type: 'oneOf', values: ['Enterprise', 'Mid-Market', 'SMB'] }],
    ['clients', 'healthScore', { type: 'readOnlyNumber' }],
    ['clients', 'daysToRenewal', { type: 'calculated', timeDependent: true }],
    ['clients', 'openBalance', { type: 'calculated', timeDependent: false }],
    ['billing', 'paymentTerms', { type: 'oneOf', values: ['Due on receipt', 'Net 15', 'Net 30', 'Net 45', 'Net 60'] }],
    ['billing', 'billingContact', { type: 'link', object: 'contacts' }],
    ['billing', 'daysOverdue', { type: 'calculated', timeDependent: true }],
    ['billing', 'dueDate', { type: 'calculated', timeDependent: false }],
    ['invoiceLines', 'invoice', { type: 'link', object: 'billing' }],
    ['usage', 'metric', { type: 'link', object: 'usageMetrics' }],
    ['usageMetrics', 'aggregation', { type: 'oneOf', values: ['Sum', 'Average', 'Maximum', 'Latest', 'Unique'] }],
    ['conversations', 'date', { type: 'dateTime' }],
    ['meetings', 'contacts', { type: 'linkList', object: 'contacts' }],
    ['tasks', 'step', { type: 'link', object: 'playbookSteps' }],
    ['tasks', 'isDone', { type: 'calculated', timeDependent: false }],
    ['playbooks', 'template', { type: 'link', object: 'playbookTemplates' }],
    ['templateTasks', 'step', { type: 'link', object: 'templateSteps' }],
    ['templateTasks', 'assignTo', { type: 'oneOf', values: ['Playbook owner', "Client's account owner", 'Specific user'] }],
    ['renewals', 'lostReason', { type: 'oneOf', values: ['Budget', 'Low adoption', 'Competitor', 'Champion left', 'Acquired / closed', 'Other'] }],
    ['opportunities', 'stage', { type: 'oneOf', values: ['Identified', 'Qualified', 'Proposal', 'Won', 'Lost'] }],
    ['surveys', 'number', { type: 'autoNumber', prefix: 'SV-' }],
    ['goals', 'progress', { type: 'calculated', timeDependent: false }],
  ])('spot check: %s.%s is %j', (object, key, format) => {
    expect(defaultObject(object)!.fields.find((field) => field.key === key)?.format).toEqual(format);
  });

  it('links point at objects of the catalogue', () => {
    for (const object of objects) {
      for (const { format } of object.fields) {
        if (format.type === 'link' || format.type === 'linkList') expect(defaultObject(format.object), format.object).toBeDefined();
      }
    }
  });

  it('is frozen: callers cannot change a definition', () => {
    const clients = defaultObject('clients')!;
    expect(Object.isFrozen(clients)).toBe(true);
    expect(Object.isFrozen(clients.fields)).toBe(true);
    expect(Object.isFrozen(clients.fields[0]!.format)).toBe(true);
  });
});

describe('defaultObject', () => {
  it.each([
    ['clients', 'clients'],
    ['opportunities', 'opportunities'],
    ['Clients', undefined],
    ['expansion', undefined],
    ['__proto__', undefined],
    ['constructor', undefined],
    ['toString', undefined],
    ['', undefined],
  ])('given key %j, it finds %j', (key, found) => {
    expect(defaultObject(key)?.key).toBe(found);
  });
});

describe('record names and unique fields (PRODUCT.md section 3)', () => {
  it.each([
    ['clients', ['name'], true],
    ['contacts', ['firstName', 'lastName'], true],
    ['billing', ['invoiceNumber'], true],
    ['invoiceLines', ['description'], false],
    ['usage', ['number'], false],
    ['usageMetrics', ['name'], true],
    ['conversations', ['subject'], false],
    ['meetings', ['title'], true],
    ['tasks', ['subject'], true],
    ['playbooks', ['name'], true],
    ['playbookSteps', ['name'], true],
    ['playbookTemplates', ['name'], true],
    ['templateSteps', ['name'], true],
    ['templateTasks', ['subject'], true],
    ['renewals', ['name'], true],
    ['opportunities', ['name'], true],
    ['surveys', ['number'], false],
    ['goals', ['name'], true],
  ])('%s is named by %j; matched by name: %s', (key, nameFields, matchByName) => {
    const object = defaultObject(key)!;
    expect(object.nameFields).toEqual(nameFields);
    expect(object.matchByName).toBe(matchByName);
    for (const field of nameFields) expect(object.fields.some((candidate) => candidate.key === field)).toBe(true);
  });

  it.each([
    ['clients', ['clientNumber']],
    ['billing', ['invoiceNumber']],
    ['usage', ['number']],
    ['surveys', ['number']],
    ['contacts', []],
    ['goals', []],
  ])('the unique fields of %s are %j', (key, fields) => {
    expect(uniqueFields(defaultObject(key)!)).toEqual(fields);
  });

  it.each([
    { object: 'contacts', given: { firstName: 'Ann', lastName: 'Lee' }, then: 'Ann Lee' },
    { object: 'contacts', given: { firstName: 'Ann', lastName: null }, then: 'Ann' },
    { object: 'contacts', given: { firstName: 'Ann' }, then: 'Ann' },
    { object: 'contacts', given: { firstName: '  Ann ', lastName: ' Lee  ' }, then: 'Ann Lee' },
    { object: 'contacts', given: { firstName: ' ', lastName: 'Lee' }, then: 'Lee' },
    { object: 'contacts', given: { firstName: '', lastName: '' }, then: null },
    { object: 'contacts', given: {}, then: null },
    { object: 'clients', given: { name: 'Acme', industry: 'Retail' }, then: 'Acme' },
    { object: 'billing', given: { invoiceNumber: 'INV-00042', client: 'c1' }, then: 'INV-00042' },
    { object: 'meetings', given: { title: 'QBR' }, then: 'QBR' },
    { object: 'tasks', given: { subject: 'Call' }, then: 'Call' },
  ])('given $object $given, the record name is $then', ({ object, given, then }) => {
    expect(recordName(defaultObject(object)!, given as Values)).toBe(then);
  });
});

describe('formatAutoNumber', () => {
  it.each([
    ['CL-', 1, 'CL-00001'],
    ['INV-', 42, 'INV-00042'],
    ['US-', 99999, 'US-99999'],
    ['SV-', 100000, 'SV-100000'],
    ['CL-', 1234567, 'CL-1234567'],
  ])('given %s and %i, it formats %s', (prefix, n, expected) => {
    expect(formatAutoNumber(prefix, n)).toBe(expected);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('refuses %d', (n) => {
    expect(() => formatAutoNumber('CL-', n)).toThrow(RangeError);
  });
});

import type { FieldDef, FieldFormat, ObjectDef } from './types.js';

/**
 * The 18 default objects of spec section 2.3, field for field (key, required flag, format), with
 * record names and name matching from PRODUCT.md section 3. Every definition is deeply frozen:
 * the catalogue hands out these very objects.
 */

const text: FieldFormat = { type: 'text' };
const number: FieldFormat = { type: 'number' };
const date: FieldFormat = { type: 'date' };
const dateTime: FieldFormat = { type: 'dateTime' };
const boolean: FieldFormat = { type: 'boolean' };
const url: FieldFormat = { type: 'url' };
const email: FieldFormat = { type: 'email' };
const person: FieldFormat = { type: 'person' };
const files: FieldFormat = { type: 'files' };
/** Formulas, roll-ups and values taken from linked records, stored by the projection. */
const calculated: FieldFormat = { type: 'calculated', timeDependent: false };
/** Computed when a record is read, from the request's date (UTC); cannot be filtered. */
const calculatedToday: FieldFormat = { type: 'calculated', timeDependent: true };
const readOnlyNumber: FieldFormat = { type: 'readOnlyNumber' };
const oneOf = (...values: string[]): FieldFormat => ({ type: 'oneOf', values });
const autoNumber = (prefix: string): FieldFormat => ({ type: 'autoNumber', prefix });
const link = (object: string): FieldFormat => ({ type: 'link', object });
const linkList = (object: string): FieldFormat => ({ type: 'linkList', object });

const optional = (key: string, label: string, format: FieldFormat): FieldDef => ({ key, label, required: false, format });
const required = (key: string, label: string, format: FieldFormat): FieldDef => ({ key, label, required: true, format });
/** A field holding personal data (PRODUCT.md "Personal data and erasure"). */
const personal = (field: FieldDef): FieldDef => ({ ...field, personal: true });
const usd: FieldFormat = { type: 'number', currency: 'USD' };

const PRIORITIES = ['Low', 'Normal', 'High', 'Urgent'];

const clients: ObjectDef = {
  key: 'clients',
  label: 'Clients',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    optional('clientNumber', 'Client number', autoNumber('CL-')),
    required('name', 'Name', text),
    optional('industry', 'Industry', text),
    optional('website', 'Website', url),
    optional('tier', 'Tier', oneOf('Enterprise', 'Mid-Market', 'SMB')),
    optional('health', 'Health', oneOf('Healthy', 'At Risk', 'Critical')),
    optional('arr', 'ARR', usd),
    optional('renewalDate', 'Renewal date', date),
    optional('notes', 'Notes', text),
    optional('owner', 'Account owner', person),
    optional('daysToRenewal', 'Days to renewal', calculatedToday),
    optional('documents', 'Documents', files),
    optional('openBalance', 'Open balance', calculated),
    optional('healthScore', 'Health score', readOnlyNumber),
  ],
};

const contacts: ObjectDef = {
  key: 'contacts',
  label: 'Contacts',
  nameFields: ['firstName', 'lastName'],
  matchByName: true,
  fields: [
    personal(required('firstName', 'First name', text)),
    personal(optional('lastName', 'Last name', text)),
    optional('role', 'Role', text),
    optional('client', 'Client', link('clients')),
    optional('isPrimary', 'Primary contact', boolean),
    personal(optional('email', 'Email', email)),
    personal(optional('phone', 'Phone', text)),
    personal(optional('notes', 'Notes', text)),
    optional('clientHealth', 'Client health', calculated),
  ],
};

const billing: ObjectDef = {
  key: 'billing',
  label: 'Billing',
  nameFields: ['invoiceNumber'],
  matchByName: true,
  fields: [
    optional('invoiceNumber', 'Invoice number', autoNumber('INV-')),
    required('client', 'Client', link('clients')),
    optional('billingContact', 'Billing contact', link('contacts')),
    required('status', 'Status', oneOf('Draft', 'Pending to send', 'Sent', 'Void')),
    optional('paymentStatus', 'Payment status', calculatedToday),
    optional('poNumber', 'PO number', text),
    optional('issueDate', 'Issue date', date),
    optional('paymentTerms', 'Payment terms', oneOf('Due on receipt', 'Net 15', 'Net 30', 'Net 45', 'Net 60')),
    optional('dueDate', 'Due date', calculated),
    optional('daysOverdue', 'Days overdue', calculatedToday),
    optional('sentDate', 'Sent date', date),
    optional('periodStart', 'Period start', date),
    optional('periodEnd', 'Period end', date),
    optional('subtotal', 'Subtotal', calculated),
    optional('discount', 'Discount', usd),
    optional('taxRate', 'Tax rate (%)', number),
    optional('taxAmount', 'Tax amount', calculated),
    optional('total', 'Total', calculated),
    optional('amountPaid', 'Amount paid', usd),
    optional('balanceDue', 'Balance due', calculated),
    optional('paidDate', 'Paid date', date),
    optional('paymentMethod', 'Payment method', oneOf('Bank transfer', 'Card', 'Direct debit', 'Cheque', 'Other')),
    optional('paymentReference', 'Payment reference', text),
    optional('billingAddress', 'Billing address', text),
    optional('notes', 'Notes', text),
    optional('documents', 'Documents', files),
  ],
};

const invoiceLines: ObjectDef = {
  key: 'invoiceLines',
  label: 'Invoice Lines',
  nameFields: ['description'],
  matchByName: false,
  fields: [
    required('invoice', 'Invoice', link('billing')),
    required('description', 'Description', text),
    required('quantity', 'Quantity', number),
    required('unitPrice', 'Unit price', usd),
    optional('amount', 'Amount', calculated),
  ],
};

const usage: ObjectDef = {
  key: 'usage',
  label: 'Usage',
  nameFields: ['number'],
  matchByName: false,
  fields: [
    optional('number', 'Number', autoNumber('US-')),
    required('client', 'Client', link('clients')),
    required('metric', 'Metric', link('usageMetrics')),
    required('date', 'Date', date),
    required('value', 'Value', number),
    optional('notes', 'Notes', text),
    optional('identifiers', 'Identifiers (user ids)', text),
  ],
};

const usageMetrics: ObjectDef = {
  key: 'usageMetrics',
  label: 'Usage Metrics',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    optional('unit', 'Unit', text),
    required('aggregation', 'Aggregation', oneOf('Sum', 'Average', 'Maximum', 'Latest', 'Unique')),
    optional('description', 'Description', text),
  ],
};

const conversations: ObjectDef = {
  key: 'conversations',
  label: 'Conversations',
  nameFields: ['subject'],
  matchByName: false,
  fields: [
    required('subject', 'Subject', text),
    optional('client', 'Client', link('clients')),
    optional('contacts', 'Contacts', linkList('contacts')),
    required('date', 'Date', dateTime),
    required('channel', 'Channel', oneOf('Email', 'Phone', 'Video call', 'Chat', 'In person')),
    optional('direction', 'Direction', oneOf('Inbound', 'Outbound')),
    optional('sentiment', 'Sentiment', oneOf('Positive', 'Neutral', 'Negative')),
    optional('owner', 'Owner', person),
    personal(optional('from', 'From', text)),
    personal(optional('to', 'To', text)),
    personal(optional('content', 'Content', text)),
    optional('summary', 'Summary', text),
    optional('nextSteps', 'Next steps', text),
  ],
};

const meetings: ObjectDef = {
  key: 'meetings',
  label: 'Meetings',
  nameFields: ['title'],
  matchByName: true,
  fields: [
    required('title', 'Title', text),
    optional('client', 'Client', link('clients')),
    optional('contacts', 'Contacts', linkList('contacts')),
    required('start', 'Start', dateTime),
    optional('duration', 'Duration (minutes)', number),
    optional('type', 'Type', oneOf('Kickoff', 'Check-in', 'QBR', 'Training', 'Escalation', 'Renewal')),
    required('status', 'Status', oneOf('Scheduled', 'Completed', 'Cancelled', 'No-show')),
    optional('location', 'Location', text),
    optional('owner', 'Owner', person),
    optional('agenda', 'Agenda', text),
    optional('summary', 'Summary', text),
    optional('outcome', 'Outcome', text),
  ],
};

const tasks: ObjectDef = {
  key: 'tasks',
  label: 'Tasks',
  nameFields: ['subject'],
  matchByName: true,
  fields: [
    required('subject', 'Subject', text),
    optional('client', 'Client', link('clients')),
    optional('contacts', 'Contacts', linkList('contacts')),
    optional('dueDate', 'Due date', date),
    required('status', 'Status', oneOf('Not started', 'In progress', 'Waiting', 'Done')),
    optional('priority', 'Priority', oneOf(...PRIORITIES)),
    optional('assignee', 'Assignee', person),
    optional('dueStatus', 'Due status', calculatedToday),
    optional('description', 'Description', text),
    optional('playbook', 'Playbook', link('playbooks')),
    optional('step', 'Playbook step', link('playbookSteps')),
    optional('isDone', 'Is done', calculated),
  ],
};

const playbooks: ObjectDef = {
  key: 'playbooks',
  label: 'Playbooks',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    required('client', 'Client', link('clients')),
    optional('owner', 'Owner', person),
    required('status', 'Status', oneOf('Not started', 'In progress', 'On hold', 'Completed', 'Cancelled')),
    optional('startDate', 'Start date', date),
    optional('targetDate', 'Target date', date),
    optional('taskCount', 'Tasks', calculated),
    optional('doneCount', 'Tasks done', calculated),
    optional('progress', 'Progress (%)', calculated),
    optional('objective', 'Objective', text),
    optional('template', 'Template', link('playbookTemplates')),
    optional('source', 'Source', text),
    optional('triggerKey', 'Trigger key', text),
  ],
};

const playbookSteps: ObjectDef = {
  key: 'playbookSteps',
  label: 'Playbook Steps',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    required('playbook', 'Playbook', link('playbooks')),
    optional('order', 'Order', number),
    optional('dueDate', 'Due date', date),
    optional('taskCount', 'Tasks', calculated),
    optional('doneCount', 'Tasks done', calculated),
    optional('progress', 'Progress (%)', calculated),
    optional('description', 'Description', text),
  ],
};

const playbookTemplates: ObjectDef = {
  key: 'playbookTemplates',
  label: 'Playbook Templates',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    optional('active', 'Active', boolean),
    required('triggerType', 'Trigger', oneOf('Manually', 'When a field changes', 'Days before a date', 'When a client is created')),
    optional('triggerField', 'Trigger field', text),
    optional('triggerValue', 'Trigger value', text),
    optional('triggerDays', 'Trigger days', number),
    optional('stepCount', 'Steps', calculated),
    optional('taskCount', 'Tasks', calculated),
    optional('description', 'Description', text),
  ],
};

const templateSteps: ObjectDef = {
  key: 'templateSteps',
  label: 'Template Steps',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    required('template', 'Template', link('playbookTemplates')),
    optional('order', 'Order', number),
    optional('dueAfterDays', 'Due after (days after start)', number),
    optional('description', 'Description', text),
  ],
};

const templateTasks: ObjectDef = {
  key: 'templateTasks',
  label: 'Template Tasks',
  nameFields: ['subject'],
  matchByName: true,
  fields: [
    required('subject', 'Subject', text),
    required('step', 'Template step', link('templateSteps')),
    required('template', 'Template', link('playbookTemplates')),
    optional('dueAfterDays', 'Due after (days after start)', number),
    optional('priority', 'Priority', oneOf(...PRIORITIES)),
    optional('assignTo', 'Assign to', oneOf('Playbook owner', "Client's account owner", 'Specific user')),
    optional('assignee', 'Assignee (the specific user)', person),
    optional('description', 'Description', text),
  ],
};

const renewals: ObjectDef = {
  key: 'renewals',
  label: 'Renewals',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    required('client', 'Client', link('clients')),
    required('renewalDate', 'Renewal date', date),
    required('stage', 'Stage', oneOf('Upcoming', 'Proposal sent', 'Negotiation', 'Won', 'Lost')),
    optional('currentArr', 'Current ARR', usd),
    optional('proposedArr', 'Proposed ARR', usd),
    optional('probability', 'Probability (%)', calculated),
    optional('forecast', 'Forecast', calculated),
    optional('change', 'Change', calculated),
    optional('daysToRenewal', 'Days to renewal', calculatedToday),
    optional('owner', 'Owner', person),
    optional('closedDate', 'Closed date', date),
    optional('lostReason', 'Lost reason', oneOf('Budget', 'Low adoption', 'Competitor', 'Champion left', 'Acquired / closed', 'Other')),
    optional('notes', 'Notes', text),
  ],
};

const opportunities: ObjectDef = {
  key: 'opportunities',
  label: 'Expansion',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    required('client', 'Client', link('clients')),
    optional('type', 'Type', oneOf('Upsell', 'Cross-sell', 'More seats', 'Services')),
    required('stage', 'Stage', oneOf('Identified', 'Qualified', 'Proposal', 'Won', 'Lost')),
    optional('amount', 'Amount', usd),
    optional('closeDate', 'Close date', date),
    optional('probability', 'Probability (%)', calculated),
    optional('forecast', 'Forecast', calculated),
    optional('owner', 'Owner', person),
    optional('description', 'Description', text),
  ],
};

const surveys: ObjectDef = {
  key: 'surveys',
  label: 'Surveys',
  nameFields: ['number'],
  matchByName: false,
  fields: [
    optional('number', 'Number', autoNumber('SV-')),
    required('type', 'Type', oneOf('NPS', 'CSAT')),
    optional('contact', 'Contact', link('contacts')),
    optional('client', 'Client', link('clients')),
    required('score', 'Score', number),
    optional('category', 'Category', calculated),
    required('date', 'Date', date),
    personal(optional('comment', 'Comment', text)),
  ],
};

const goals: ObjectDef = {
  key: 'goals',
  label: 'Goals',
  nameFields: ['name'],
  matchByName: true,
  fields: [
    required('name', 'Name', text),
    required('client', 'Client', link('clients')),
    required('status', 'Status', oneOf('Not started', 'On track', 'At risk', 'Achieved', 'Missed')),
    optional('metric', 'Metric (success measure)', text),
    optional('baseline', 'Baseline', number),
    optional('target', 'Target', number),
    optional('current', 'Current', number),
    optional('progress', 'Progress (%)', calculated),
    optional('targetDate', 'Target date', date),
    optional('owner', 'Owner', person),
    optional('description', 'Description', text),
  ],
};

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** In the order of spec section 2.3. */
export const DEFAULT_OBJECTS: readonly ObjectDef[] = deepFreeze([
  clients,
  contacts,
  billing,
  invoiceLines,
  usage,
  usageMetrics,
  conversations,
  meetings,
  tasks,
  playbooks,
  playbookSteps,
  playbookTemplates,
  templateSteps,
  templateTasks,
  renewals,
  opportunities,
  surveys,
  goals,
]);

import { comparePositions } from '../../src/eventstore/position.js';
import { filterKey } from '../../src/schema/filterKey.js';
import type { FieldFilter, ReadStore, RecordDocument, Values } from '../../src/readstore/port.js';
import { timeDependentCalculations } from '../../src/schema/calculated.js';
import type { HealthInputs } from '../../src/schema/healthScore.js';

/**
 * Loads what a client's health score depends on from the records read model. Callers wait for
 * the records projection first (reactors never read a model that lags behind their event).
 */

const PAGE = 1000;

export async function findAllDocuments(readStore: ReadStore, workspaceId: string, object: string, filters: FieldFilter[]): Promise<RecordDocument[]> {
  const documents: RecordDocument[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await readStore.find({ workspaceId, object, filters, limit: PAGE, offset });
    documents.push(...page.documents);
    if (page.documents.length < PAGE) return documents;
  }
}

function valuesOf(object: string, document: RecordDocument, today: string): Values {
  const values = { ...document.fields, ...document.calculated };
  return { ...values, ...timeDependentCalculations(object, values, today) };
}

export async function loadHealthInputs(readStore: ReadStore, workspaceId: string, clientId: string, today: string): Promise<HealthInputs> {
  const linkedTo = async (object: string, field: string, id: string) =>
    findAllDocuments(readStore, workspaceId, object, [{ field, value: filterKey(id) }]);
  const of = async (object: string) => (await linkedTo(object, 'client', clientId)).map((document) => valuesOf(object, document, today));

  const contacts = await linkedTo('contacts', 'client', clientId);
  const surveys = new Map<string, RecordDocument>();
  for (const survey of await linkedTo('surveys', 'client', clientId)) surveys.set(survey.id, survey);
  for (const contact of contacts) {
    for (const survey of await linkedTo('surveys', 'contact', contact.id)) surveys.set(survey.id, survey);
  }
  const inCreationOrder = [...surveys.values()].sort((a, b) => comparePositions(a.createdPosition, b.createdPosition));

  const [billing, meetings, conversations, tasks, renewals, goals] = await Promise.all(
    ['billing', 'meetings', 'conversations', 'tasks', 'renewals', 'goals'].map(of),
  );
  return {
    billing: billing!,
    surveys: inCreationOrder.map((survey) => valuesOf('surveys', survey, today)),
    meetings: meetings!,
    conversations: conversations!,
    tasks: tasks!,
    renewals: renewals!,
    goals: goals!,
  };
}

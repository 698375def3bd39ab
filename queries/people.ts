import { NotFound, ValidationFailed } from '../src/core/errors.js';
import type { EventStore } from '../src/eventstore/port.js';
import { everLinked, linkingObjects } from '../src/privacy/linked.js';
import { personalOf } from '../src/privacy/personal.js';
import { filterKey } from '../src/schema/filterKey.js';
import type { ReadStore } from '../src/readstore/port.js';
import { defaultObject, type Catalogue } from '../src/schema/catalogue.js';
import { getRecord } from './get.js';
import { recordHistory, type HistoryEntry } from './history.js';
import { MAX_LIMIT } from './paging.js';
import type { RenderContext } from './recordFormat.js';

/**
 * `csr privacy find` and `csr privacy export` (docs/privacy.md): every record holding a person's
 * data (the contact, the records that link or ever linked it, records whose personal custom fields
 * hold the person's email), and everything held about them with each record's history.
 */

export interface PeopleContext extends RenderContext {
  events: EventStore;
  readStore: ReadStore;
  catalogue: Catalogue;
}

export interface PersonalRecord {
  object: string;
  id: string;
  /** 'contact', 'links the contact', or 'field <key> holds the email'. */
  why: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function checkEmail(email: string): string {
  if (!EMAIL.test(email.trim())) throw new ValidationFailed(`"${email}" is not an email address`);
  return email.trim();
}

/** The contacts with this email (case-insensitive), from the read model. */
export async function contactsWithEmail(ctx: Pick<PeopleContext, 'readStore' | 'workspaceId'>, email: string): Promise<string[]> {
  const found = await ctx.readStore.find({ workspaceId: ctx.workspaceId, object: 'contacts', filters: [{ field: 'email', value: filterKey(checkEmail(email)) }], limit: 10_000, offset: 0 });
  return found.documents.map((document) => document.id);
}

export async function findPerson(ctx: PeopleContext, query: { email?: string; contact?: string }): Promise<PersonalRecord[]> {
  const contacts = query.contact ? [query.contact] : await contactsWithEmail(ctx, query.email!);
  const emails = new Set<string>(query.email ? [checkEmail(query.email)] : []);
  const found: PersonalRecord[] = [];
  for (const id of contacts) {
    const contact = await ctx.readStore.get(ctx.workspaceId, 'contacts', id);
    if (!contact && query.contact) {
      const [first] = await ctx.events.readStream(`record-${id}`, { maxCount: 1 });
      if (!first || first.data['workspaceId'] !== ctx.workspaceId || first.data['object'] !== 'contacts') throw new NotFound(`contact ${id} not found in this workspace`);
    }
    if (typeof contact?.fields['email'] === 'string') emails.add(contact.fields['email']);
    found.push({ object: 'contacts', id, why: 'contact' });
  }
  for (const record of await everLinked(ctx.events, ctx.workspaceId, linkingObjects(ctx.catalogue), new Set(contacts))) found.push({ ...record, why: 'links the contact' });
  for (const object of ctx.catalogue.objects) {
    const builtIn = new Set(defaultObject(object.key)?.fields.map((field) => field.key) ?? []);
    for (const key of personalOf(object)) {
      if (builtIn.has(key)) continue;
      for (const email of emails) {
        const { documents } = await ctx.readStore.find({ workspaceId: ctx.workspaceId, object: object.key, filters: [{ field: key, value: filterKey(email) }], limit: 10_000, offset: 0 });
        for (const document of documents) found.push({ object: object.key, id: document.id, why: `field ${key} holds the email` });
      }
    }
  }
  const seen = new Set<string>();
  return found.filter((record) => (seen.has(record.id) ? false : (seen.add(record.id), true)));
}

export interface PersonExport {
  records: { object: string; id: string; why: string; record: Record<string, unknown> | null; history: HistoryEntry[] }[];
}

export async function exportPerson(ctx: PeopleContext, contactId: string): Promise<PersonExport> {
  const records: PersonExport['records'] = [];
  for (const found of await findPerson(ctx, { contact: contactId })) {
    const object = ctx.catalogue.object(found.object);
    if (!object) continue;
    const record = await getRecord(ctx, object, found.id).catch((error: unknown) => {
      if (error instanceof NotFound) return null;
      throw error;
    });
    const history: HistoryEntry[] = [];
    for (let offset = 0; ; offset += MAX_LIMIT) {
      const page = await recordHistory({ ...ctx, canAccess: () => true }, object, found.id, { limit: [String(MAX_LIMIT)], offset: [String(offset)] });
      history.push(...page.data);
      if (page.data.length === 0 || history.length >= page.total) break;
    }
    records.push({ ...found, record, history });
  }
  return { records };
}

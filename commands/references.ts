import type { ReadStore, Values } from '../src/readstore/port.js';
import { filterKey } from '../src/schema/filterKey.js';
import type { User } from '../src/setup/port.js';
import { isUuid } from '../src/core/ids.js';
import type { FieldInput, Reference } from '../src/schema/validate.js';

/**
 * Turns validated field inputs into stored values: links and people given by id, { id }, name or
 * email become ids. Matching is exact and case-insensitive; none or several matches fail the record.
 * One resolver serves one request and remembers what it resolved.
 */

export type Resolved = { ok: true; values: Values } | { ok: false; message: string };

type Lookup = { ok: true; id: string } | { ok: false; message: string };

export class ReferenceResolver {
  private readonly links = new Map<string, Promise<Lookup>>();
  private users: Promise<User[]> | undefined;

  constructor(
    private readonly readStore: ReadStore,
    private readonly workspaceId: string,
    private readonly listUsers: (workspaceId: string) => Promise<User[]>,
  ) {}

  async resolve(fields: Record<string, FieldInput>): Promise<Resolved> {
    const values: Values = {};
    for (const [key, input] of Object.entries(fields)) {
      if (input.kind === 'value') {
        values[key] = input.value;
        continue;
      }
      const refs = input.kind === 'link' ? input.refs : [input.ref];
      const ids: string[] = [];
      for (const ref of refs) {
        const found = input.kind === 'link' ? await this.link(input.object, ref) : await this.person(ref);
        if (!found.ok) return { ok: false, message: `${key}: ${found.message}` };
        ids.push(found.id);
      }
      values[key] = input.kind === 'link' && input.many ? [...new Set(ids)] : ids[0]!;
    }
    return { ok: true, values };
  }

  private link(object: string, ref: Reference): Promise<Lookup> {
    const cacheKey = `${object}\u0000${'id' in ref ? `id:${ref.id}` : `text:${filterKey(ref.text)}`}`;
    let lookup = this.links.get(cacheKey);
    if (!lookup) {
      lookup = this.findLink(object, ref);
      this.links.set(cacheKey, lookup);
    }
    return lookup;
  }

  private async findLink(object: string, ref: Reference): Promise<Lookup> {
    const text = 'id' in ref ? ref.id : ref.text;
    if (isUuid(text)) {
      const byId = await this.readStore.get(this.workspaceId, object, text.toLowerCase());
      if (byId) return { ok: true, id: byId.id };
      if ('id' in ref) return { ok: false, message: `no ${object} record with id ${text}` };
    }
    const byName = await this.readStore.find({
      workspaceId: this.workspaceId,
      object,
      filters: [],
      name: filterKey(text),
      limit: 1,
      offset: 0,
    });
    if (byName.total === 1) return { ok: true, id: byName.documents[0]!.id };
    return byName.total === 0
      ? { ok: false, message: `no ${object} record with id or name "${text}"` }
      : { ok: false, message: `ambiguous match: ${byName.total} ${object} records named "${text}"` };
  }

  private async person(ref: Reference): Promise<Lookup> {
    this.users ??= this.listUsers(this.workspaceId);
    const users = await this.users;
    if ('id' in ref) {
      const user = users.find((candidate) => candidate.id === ref.id);
      return user ? { ok: true, id: user.id } : { ok: false, message: `no user with id ${ref.id}` };
    }
    const wanted = filterKey(ref.text);
    const matches = users.filter(
      (user) => user.id === ref.text || filterKey(user.email) === wanted || filterKey(user.name) === wanted,
    );
    if (matches.length === 1) return { ok: true, id: matches[0]!.id };
    return matches.length === 0
      ? { ok: false, message: `no user with id, email or name "${ref.text}"` }
      : { ok: false, message: `ambiguous match: ${matches.length} users match "${ref.text}"` };
  }
}

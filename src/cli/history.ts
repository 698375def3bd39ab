import { getRecordAsOf, parseAsOf } from '../../queries/asOf.js';
import { getRecord } from '../../queries/get.js';
import { recordHistory, type HistoryEntry } from '../../queries/history.js';
import { MAX_LIMIT } from '../../queries/paging.js';
import { todayUtc, type RenderContext } from '../../queries/recordFormat.js';
import { NotFound, ValidationFailed } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { loadCatalogue } from '../setup/catalogues.js';
import type { ObjectDef } from '../schema/types.js';
import { stringOption, type CliContext, type CliResource, type OptionValues } from './context.js';

/**
 * `csr history` and `csr get`: a record's history and a record as of a moment, for auditors, with
 * the same answers as the API gives a key with access to every object.
 */

async function address(context: CliContext, values: OptionValues, positionals: string[]): Promise<{ workspaceId: string; object: ObjectDef; id: string }> {
  const slug = stringOption(values, 'workspace')!;
  const workspace = await context.backends.setup.workspaceBySlug(slug);
  if (!workspace) throw new NotFound(`no workspace with slug "${slug}"; csr workspaces create ${slug} creates one`);
  const [objectKey, id] = positionals as [string, string];
  const object = (await loadCatalogue(context.backends.events, workspace.id)).object(objectKey);
  if (!object) throw new NotFound(`unknown object "${objectKey}"`);
  if (!isUuid(id) || id !== id.toLowerCase()) throw new NotFound(`${object.key} record ${id} not found`);
  return { workspaceId: workspace.id, object, id };
}

function renderContext(context: CliContext, workspaceId: string, now: Date): RenderContext {
  return {
    workspaceId,
    readStore: context.backends.readStore,
    listUsers: (id) => context.backends.setup.listUsers(id),
    canAccess: () => true,
    today: todayUtc(now),
  };
}

function changeText(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(changeText).join(', ');
  if (typeof value === 'object') {
    const { id, name } = value as { id?: string; name?: string | null };
    return name ? `${name} (${id})` : String(id);
  }
  return String(value);
}

/** time, who, via, then one "field: from -> to" line per change. */
function historyText(entries: HistoryEntry[]): string {
  if (entries.length === 0) return '(none)\n';
  return `${entries
    .map((entry) => {
      const reason = entry.event === 'erased' ? `  reason: ${entry.reason ?? '-'}` : '';
      const head = `${entry.occurredAt}  ${entry.event.padEnd(7)}  ${entry.actor.name || entry.actor.type}  ${entry.via}${reason}`;
      const changes = Object.entries(entry.changes).map(([key, change]) =>
        'erased' in change ? `    ${key}: erased ${entry.erasedAt ?? ''}`.trimEnd() : `    ${key}: ${changeText(change.from)} -> ${changeText(change.to)}`,
      );
      const rollups = Object.entries(entry.rollups ?? {}).map(([key, change]) => `    ${key} (roll-up): ${changeText(change.from)} -> ${changeText(change.to)}`);
      return [head, ...changes, ...rollups].join('\n');
    })
    .join('\n')}\n`;
}

export const history: CliResource = {
  name: 'history',
  description: "a record's changes, oldest first: when, who, via what, each field from -> to",
  commands: {},
  direct: {
    usage: '<object> <id> --workspace <slug>',
    description: 'show the history of one record (also of a deleted one)',
    positionals: ['object', 'id'],
    options: { workspace: { type: 'string' } },
    required: ['workspace'],
    async run({ values, positionals }, context) {
      const { workspaceId, object, id } = await address(context, values, positionals);
      const ctx = { ...renderContext(context, workspaceId, new Date()), events: context.backends.events };
      const entries: HistoryEntry[] = [];
      for (let offset = 0; ; offset += MAX_LIMIT) {
        const page = await recordHistory(ctx, object, id, { limit: [String(MAX_LIMIT)], offset: [String(offset)] });
        entries.push(...page.data);
        if (entries.length >= page.total) return entries;
      }
    },
    text: historyText,
  },
};

export const get: CliResource = {
  name: 'get',
  description: 'one record as the API shows it, now or as of a moment',
  commands: {},
  direct: {
    usage: '<object> <id> --workspace <slug> [--as-of <ISO 8601 time>]',
    description: 'show one record; with --as-of, as it was then (calculated values included)',
    positionals: ['object', 'id'],
    options: { workspace: { type: 'string' }, 'as-of': { type: 'string' } },
    required: ['workspace'],
    async run({ values, positionals }, context) {
      const { workspaceId, object, id } = await address(context, values, positionals);
      const now = new Date();
      const raw = stringOption(values, 'as-of');
      const ctx = renderContext(context, workspaceId, now);
      if (raw === undefined) return getRecord(ctx, object, id);
      let at: Date;
      try {
        at = parseAsOf(raw, now);
      } catch (error) {
        throw new ValidationFailed(error instanceof Error ? error.message.replace('as_of', '--as-of') : String(error));
      }
      const { readStore, events } = context.backends;
      return getRecordAsOf(ctx, { events, find: readStore.find.bind(readStore), linkSources: readStore.linkSources.bind(readStore) }, object, id, at);
    },
  },
};

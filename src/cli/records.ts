import { findDuplicates } from '../../queries/duplicates.js';
import { NotFound } from '../core/errors.js';
import { listOption, stringOption, type CliResource } from './context.js';

export const records: CliResource = {
  name: 'records',
  description: 'operator views of a workspace\'s records',
  commands: {
    duplicates: {
      usage: '--workspace <slug> <object> [--match a,b]',
      description: 'list groups of records an upsert would find ambiguous (same name, unique value or --match fields); see docs/concurrency.md to merge them',
      positionals: ['object'],
      options: { workspace: { type: 'string' }, match: { type: 'string' } },
      required: ['workspace'],
      async run({ positionals, values }, context) {
        const workspaceId = await context.workspaceId(stringOption(values, 'workspace')!);
        const object = (await context.objects.catalogue(stringOption(values, 'workspace')!)).object(positionals[0]!);
        if (!object) throw new NotFound(`unknown object '${positionals[0]!}'`);
        const match = listOption(values, 'match');
        return findDuplicates(context.readStore, workspaceId, object, match === 'all' ? undefined : match);
      },
    },
  },
};

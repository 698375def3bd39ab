import { startPlaybookManually } from '../../commands/playbook/manual.js';
import { listRuns } from '../../commands/playbook/runs.js';
import { todayUtc } from '../schema/dates.js';
import { stringOption, type CliResource } from './context.js';

/** `csr playbooks start` (the "Manually" trigger) and `csr automation runs` (issue 26). */

export const playbooks: CliResource = {
  name: 'playbooks',
  description: 'playbooks made from templates',
  commands: {
    start: {
      usage: '--workspace <slug> --template <id|name> --client <id|name>',
      description: "start a template's playbook for a client (its steps and tasks too), source automation",
      options: { workspace: { type: 'string' }, template: { type: 'string' }, client: { type: 'string' } },
      required: ['workspace', 'template', 'client'],
      async run({ values }, context) {
        const records = context.records();
        const workspaceId = await context.workspaceId(stringOption(values, 'workspace')!);
        return startPlaybookManually(records.commands, workspaceId, stringOption(values, 'template')!, stringOption(values, 'client')!, todayUtc(new Date()));
      },
    },
  },
};

export const automation: CliResource = {
  name: 'automation',
  description: 'playbook rules: what fired and what failed',
  commands: {
    runs: {
      usage: '--workspace <slug> [--limit <n>]',
      description: 'the latest automation runs, newest first, with the reason of each failed one',
      options: { workspace: { type: 'string' }, limit: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, context) {
        const records = context.records();
        const workspaceId = await context.workspaceId(stringOption(values, 'workspace')!);
        const limit = Number(stringOption(values, 'limit') ?? '100');
        if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new Error('--limit must be a whole number from 1 to 10000');
        return listRuns(records.commands.events, workspaceId, limit);
      },
    },
  },
};

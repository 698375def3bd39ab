import { createReadStream, statSync } from 'node:fs';
import { basename } from 'node:path';
import { importCsv, type ImportResult } from '../../commands/import/csvImport.js';
import { stringOption, UsageError, type CliCommand, type CliResource } from './context.js';
import { progressReporter } from './progress.js';

/**
 * `csr import <object> <file.csv> --workspace <slug> [--match <fields>] [--dry-run] [--json]`
 * (issue 26, docs/automation.md). Exit code 1 when any row failed; the others are saved.
 */

function importCommand(): CliCommand {
  return {
    usage: '<object> <file.csv> --workspace <slug> [--match <fields>] [--dry-run]',
    description: 'import records of an object (default or the workspace\'s own) from a CSV file (UTF-8, header row of field keys or labels)',
    positionals: ['object', 'file.csv'],
    options: { workspace: { type: 'string' }, match: { type: 'string' }, 'dry-run': { type: 'boolean' } },
    required: ['workspace'],
    async run({ positionals, values }, context) {
      const [objectKey, path] = positionals as [string, string];
      let size: number;
      try {
        size = statSync(path).size;
      } catch {
        throw new UsageError(`cannot read the file "${path}"`);
      }
      const records = context.records();
      const workspaceId = await context.workspaceId(stringOption(values, 'workspace')!);
      const object = (await context.objects.catalogue(stringOption(values, 'workspace')!)).object(objectKey);
      if (!object) throw new UsageError(`unknown object "${objectKey}"`);
      const input = createReadStream(path);
      const progress = progressReporter(process.stderr, size, () => input.bytesRead);
      const dryRun = values['dry-run'] === true;
      try {
        const result = await importCsv(records.commands, input, {
          workspaceId,
          object,
          fileName: basename(path),
          ...(stringOption(values, 'match') ? { match: stringOption(values, 'match')! } : {}),
          dryRun,
          onProgress: progress.update,
        });
        return dryRun ? { ...result, dryRun } : result;
      } finally {
        progress.done();
      }
    },
    failed: (result: ImportResult) => result.errors.length > 0,
    text(result: ImportResult & { dryRun?: boolean }) {
      // A dry run's counts are what a real run would do: said so, never as if it had been done.
      const lines = result.dryRun
        ? [`would create: ${result.created}`, `would update: ${result.updated}`, `errors:       ${result.errors.length}`]
        : [`created: ${result.created}`, `updated: ${result.updated}`, `errors:  ${result.errors.length}`];
      for (const error of result.errors) lines.push(`  row ${error.row}: ${error.message}`);
      if (result.dryRun) lines.push('(a dry run: nothing was written)');
      return `${lines.join('\n')}\n`;
    },
  };
}

export const imports: CliResource = {
  name: 'import',
  description: 'records from a CSV file (docs/automation.md)',
  commands: {},
  direct: importCommand(),
};

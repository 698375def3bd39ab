import { listSkippedNumbers } from '../../queries/skippedNumbers.js';
import { NotFound, ValidationFailed } from '../core/errors.js';
import { stringOption, type CliResource } from './context.js';

export const numbers: CliResource = {
  name: 'numbers',
  description: 'auto numbers (clientNumber, invoiceNumber, ...): the ones no record took',
  commands: {
    skipped: {
      usage: '--workspace <slug> [<object>]',
      description:
        'list the auto numbers skipped, per object, with the reason and when (only EventStoreDB can skip one: a process that died between a number\'s reservation and its record; the embedded and PostgreSQL stores write them together and list none)',
      optionalPositionals: ['object'],
      options: { workspace: { type: 'string' } },
      required: ['workspace'],
      async run({ positionals, values }, context) {
        const slug = stringOption(values, 'workspace')!;
        const workspaceId = await context.workspaceId(slug);
        const catalogue = await context.objects.catalogue(slug);
        const numbered = catalogue.objects.filter((object) => object.fields.some((field) => field.format.type === 'autoNumber'));
        const wanted = positionals[0];
        if (wanted !== undefined) {
          const object = catalogue.object(wanted);
          if (!object) throw new NotFound(`unknown object '${wanted}'`);
          if (!numbered.includes(object)) throw new ValidationFailed(`object '${wanted}' has no auto-number field`);
        }
        return listSkippedNumbers(context.backends.events, workspaceId, wanted !== undefined ? [wanted] : numbered.map((object) => object.key));
      },
    },
  },
};

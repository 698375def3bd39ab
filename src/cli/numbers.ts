import { AutoNumbers } from '../../commands/autoNumbers.js';
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
        'list the auto numbers skipped, per object, with the reason and when (only EventStoreDB can skip one: a process that died between a number\'s reservation and its record; there the counters are audited first, up to the last 30 s; the embedded and PostgreSQL stores write a number with its record and list none)',
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
        const listed = wanted !== undefined ? numbered.filter((object) => object.key === wanted) : numbered;
        // Where numbers can be skipped (EventStoreDB), what the server has not audited yet (no number
        // of that object taken since) is audited first, as the server would: the list is complete
        // up to the reservations of the last 30 s. Elsewhere this does nothing.
        const audit = new AutoNumbers(context.backends.events);
        for (const object of listed) {
          const field = object.fields.find((candidate) => candidate.format.type === 'autoNumber')!;
          await audit.audit(workspaceId, { object, field: field.key, prefix: field.format.type === 'autoNumber' ? field.format.prefix : '' });
        }
        return listSkippedNumbers(context.backends.events, workspaceId, listed.map((object) => object.key));
      },
    },
  },
};

import { definableFormats } from '../schema/schemaDecider.js';
import { listOption, stringOption, type CliCommand, type CliResource } from './context.js';

/** `csr fields`: the fields of an object; a workspace adds its own to any object. */

const target = { workspace: { type: 'string' } } as const;

const switchCommand = (active: boolean): CliCommand => ({
  usage: '--workspace <slug> <object> <key>',
  description: active
    ? 'bring a deactivated field back, with the values it had'
    : 'deactivate a workspace-defined field: it leaves the API and OpenAPI; its values stay in the log',
  positionals: ['object', 'key'],
  options: target,
  required: ['workspace'],
  async run({ positionals, values }, { objects }) {
    return objects.setActive(stringOption(values, 'workspace')!, positionals[0]!, positionals[1]!, active);
  },
});

export const fields: CliResource = {
  name: 'fields',
  description: 'the fields of an object; add your own to any object',
  commands: {
    add: {
      usage:
        '--workspace <slug> <object> <key> --format <format> [--required] [--personal] [--options "A,B,C"] [--link-to <object>] [--prefix <text>] [--label "..."]',
      description: `add a field; formats: ${definableFormats().join(', ')}`,
      positionals: ['object', 'key'],
      options: {
        ...target,
        format: { type: 'string' },
        required: { type: 'boolean' },
        personal: { type: 'boolean' },
        options: { type: 'string' },
        'link-to': { type: 'string' },
        prefix: { type: 'string' },
        label: { type: 'string' },
      },
      required: ['workspace', 'format'],
      async run({ positionals, values }, { objects }) {
        const options = listOption(values, 'options');
        const linkTo = stringOption(values, 'link-to');
        const prefix = stringOption(values, 'prefix');
        const label = stringOption(values, 'label');
        return objects.addField(stringOption(values, 'workspace')!, positionals[0]!, positionals[1]!, {
          format: stringOption(values, 'format')!,
          required: values['required'] === true,
          personal: values['personal'] === true,
          ...(options !== undefined ? { options: options === 'all' ? ['all'] : options } : {}),
          ...(linkTo !== undefined ? { linkTo } : {}),
          ...(prefix !== undefined ? { prefix } : {}),
          ...(label !== undefined ? { label } : {}),
        });
      },
    },
    list: {
      usage: '--workspace <slug> <object>',
      description: 'list the fields of an object: format, required, personal, default or custom, active',
      positionals: ['object'],
      options: target,
      required: ['workspace'],
      async run({ positionals, values }, { objects }) {
        return objects.listFields(stringOption(values, 'workspace')!, positionals[0]!);
      },
    },
    deactivate: switchCommand(false),
    reactivate: switchCommand(true),
    label: {
      usage: '--workspace <slug> <object> <key> --label "..."',
      description: 'rename the label of a workspace-defined field (its key stays)',
      positionals: ['object', 'key'],
      options: { ...target, label: { type: 'string' } },
      required: ['workspace', 'label'],
      async run({ positionals, values }, { objects }) {
        return objects.changeLabel(stringOption(values, 'workspace')!, positionals[0]!, positionals[1]!, stringOption(values, 'label')!);
      },
    },
    'add-option': {
      usage: '--workspace <slug> <object> <key> <value>',
      description: 'add a value to the list of a workspace-defined oneOf field',
      positionals: ['object', 'key', 'value'],
      options: target,
      required: ['workspace'],
      async run({ positionals, values }, { objects }) {
        return objects.addOption(stringOption(values, 'workspace')!, positionals[0]!, positionals[1]!, positionals[2]!);
      },
    },
  },
};

import { stringOption, type CliResource } from './context.js';

/** `csr objects`: a workspace's objects, the default ones and its own (spec 1, Object Manager). */
export const objects: CliResource = {
  name: 'objects',
  description: "a workspace's objects: the default ones and its own (Object Manager)",
  commands: {
    create: {
      usage: '--workspace <slug> <key> --name "Onboarding Projects" [--record-name <fieldKey>] [--record-name-label <text>]',
      description: 'create an object; it gets a required text field (default key "name") that names its records',
      positionals: ['key'],
      options: {
        workspace: { type: 'string' },
        name: { type: 'string' },
        'record-name': { type: 'string' },
        'record-name-label': { type: 'string' },
      },
      required: ['workspace', 'name'],
      async run({ positionals, values }, { objects }) {
        const recordName = stringOption(values, 'record-name');
        const recordNameLabel = stringOption(values, 'record-name-label');
        return objects.createObject(stringOption(values, 'workspace')!, positionals[0]!, {
          name: stringOption(values, 'name')!,
          ...(recordName !== undefined ? { recordName } : {}),
          ...(recordNameLabel !== undefined ? { recordNameLabel } : {}),
        });
      },
    },
    list: {
      usage: '--workspace <slug>',
      description: "list the workspace's objects (default and its own) with their field counts",
      options: { workspace: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, { objects }) {
        return objects.listObjects(stringOption(values, 'workspace')!);
      },
    },
  },
};

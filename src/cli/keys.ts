import type { ApiKey } from '../setup/port.js';
import { listOption, stringOption, type CliResource } from './context.js';
import { formatText } from './output.js';

/** What `keys list` shows of a key: never its value (not stored) nor its fingerprint. */
function listed(key: ApiKey) {
  return {
    id: key.id,
    name: key.name,
    access: key.access,
    objects: key.objects,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt,
    revokedAt: key.revokedAt,
  };
}

export const keys: CliResource = {
  name: 'keys',
  description: 'API keys: one workspace each, read-only or read-write, all objects or chosen ones',
  commands: {
    create: {
      usage: '--workspace <slug> --name <text> [--read-only] [--objects a,b]',
      description: 'create an API key; its value is shown this once',
      options: {
        workspace: { type: 'string' },
        name: { type: 'string' },
        'read-only': { type: 'boolean' },
        objects: { type: 'string' },
      },
      required: ['workspace', 'name'],
      async run({ values }, { setup }) {
        const { apiKey, key } = await setup.createKey(stringOption(values, 'workspace')!, {
          name: stringOption(values, 'name')!,
          readOnly: values['read-only'] === true,
          objects: listOption(values, 'objects') ?? 'all',
        });
        return { id: apiKey.id, name: apiKey.name, key, access: apiKey.access, objects: apiKey.objects };
      },
      text(result: { key: string }) {
        return `${formatText(result)}\nCopy the key now: it is shown this once and cannot be shown again.\n`;
      },
    },
    list: {
      usage: '--workspace <slug>',
      description: "list a workspace's API keys (never their values)",
      options: { workspace: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, { setup }) {
        return (await setup.listKeys(stringOption(values, 'workspace')!)).map(listed);
      },
    },
    revoke: {
      usage: '<keyId>',
      description: 'revoke an API key; it stops working on the next request',
      positionals: ['keyId'],
      async run({ positionals }, { setup }) {
        const key = await setup.revokeKey(positionals[0]!);
        return { id: key.id, revokedAt: key.revokedAt };
      },
    },
    rename: {
      usage: '<keyId> --name <text>',
      description: 'give an API key a new name (history keeps the name each change was made with)',
      positionals: ['keyId'],
      options: { name: { type: 'string' } },
      required: ['name'],
      async run({ positionals, values }, { setup }) {
        return listed(await setup.renameKey(positionals[0]!, stringOption(values, 'name')!));
      },
    },
  },
};

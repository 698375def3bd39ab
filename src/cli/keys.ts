import type { RefusalStats } from '../ratelimit/port.js';
import type { ApiKey } from '../setup/port.js';
import { listOption, stringOption, type CliResource } from './context.js';
import { formatText } from './output.js';

/**
 * What `keys list` shows of a key: never its value (not stored) nor its fingerprint. `rateLimit`:
 * its own, else `default` (RATE_LIMIT_DEFAULT of the server, if set); `refused`: its 429s of the
 * last hour or so on this machine, `refusedAt` the last one's time (docs/sync-clients.md).
 */
function listed(key: ApiKey, refusals?: RefusalStats) {
  return {
    id: key.id,
    name: key.name,
    access: key.access,
    objects: key.objects,
    rateLimit: key.rateLimit ?? 'default',
    ...(refusals === undefined ? {} : { refused: refusals.recent, refusedAt: refusals.lastAt }),
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
      usage: '--workspace <slug> --name <text> [--read-only] [--objects a,b] [--rate 20/s[,burst=40]]',
      description: 'create an API key; its value is shown this once',
      options: {
        workspace: { type: 'string' },
        name: { type: 'string' },
        'read-only': { type: 'boolean' },
        objects: { type: 'string' },
        rate: { type: 'string' },
      },
      required: ['workspace', 'name'],
      async run({ values }, { setup }) {
        const { apiKey, key } = await setup.createKey(stringOption(values, 'workspace')!, {
          name: stringOption(values, 'name')!,
          readOnly: values['read-only'] === true,
          objects: listOption(values, 'objects') ?? 'all',
          ...(stringOption(values, 'rate') === undefined ? {} : { rate: stringOption(values, 'rate')! }),
        });
        return { id: apiKey.id, name: apiKey.name, key, access: apiKey.access, objects: apiKey.objects, rateLimit: apiKey.rateLimit ?? 'default' };
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
      async run({ values }, { setup, backends }) {
        const found = await setup.listKeys(stringOption(values, 'workspace')!);
        const refusals = await backends.rateLimits.refusals(found.map((key) => key.id));
        return found.map((key) => listed(key, refusals.get(key.id) ?? { recent: 0, lastAt: null }));
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
    update: {
      usage: '<keyId> --rate <20/s[,burst=40]|none>',
      description: "set an API key's own rate limit (none: RATE_LIMIT_DEFAULT applies, if set); the API applies it on the next request",
      positionals: ['keyId'],
      options: { rate: { type: 'string' } },
      required: ['rate'],
      async run({ positionals, values }, { setup }) {
        return listed(await setup.setKeyRateLimit(positionals[0]!, stringOption(values, 'rate')!));
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

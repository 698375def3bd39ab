import { LINK_TTL_MS, SignIn } from '../setup/signIn.js';
import { cliActor } from '../setup/service.js';
import type { Config } from '../config.js';
import { stringOption, UsageError, type CliResource } from './context.js';

/** `csr setup link`: the way into the Setup page (docs/setup.md). */

/** The server's address as this configuration listens on it; a wildcard host is reached at localhost. */
function serverBase(config: Config): string {
  const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

function baseUrl(given: string | undefined, config: Config): string {
  if (given === undefined) return serverBase(config);
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError(`--url must be the address the server is reached at, such as https://csr.example.com (got "${given}")`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError('--url must start with https:// or http://');
  return url.href.replace(/\/+$/, '');
}

export const setupPage: CliResource = {
  name: 'setup',
  description: 'the Setup web page (API keys, webhooks, objects and fields, projections)',
  commands: {
    link: {
      usage: '--workspace <slug> [--user <email>] [--url <https://server>]',
      description: `print a one-time sign-in link to the Setup page, valid ${LINK_TTL_MS / 60_000} minutes; changes are made as that user (the operator by default)`,
      options: { workspace: { type: 'string' }, user: { type: 'string' }, url: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, context) {
        const signIn = new SignIn({ setup: context.backends.setup, sessions: context.backends.sessions });
        const operator = cliActor();
        const link = await signIn.createLink(stringOption(values, 'workspace')!, stringOption(values, 'user'), { id: operator.id, name: operator.name });
        const url = `${baseUrl(stringOption(values, 'url'), context.config)}/setup/sign-in?token=${link.token}`;
        return { url, expiresAt: link.expiresAt, as: link.actor.name };
      },
      text(result: { url: string; expiresAt: string; as: string }) {
        return `${result.url}\nOpen it before ${result.expiresAt} (it signs in once, as ${result.as}).\n`;
      },
    },
  },
};

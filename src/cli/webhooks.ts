import type { Delivery, Webhook } from '../webhooks/port.js';
import { listOption, stringOption, UsageError, type CliResource } from './context.js';
import { formatText } from './output.js';
import { momentProblem, parseMoment } from '../schema/dates.js';
import { listen } from './webhookListen.js';

/** What `webhooks list` and `on`/`off` show of a webhook: never its secret. */
function shown(webhook: Webhook) {
  return {
    id: webhook.id,
    name: webhook.name,
    url: webhook.url,
    events: webhook.events,
    objects: webhook.objects,
    enabled: webhook.enabled,
    disabledReason: webhook.disabledReason,
  };
}

function shownDelivery(delivery: Delivery) {
  return {
    id: delivery.id,
    eventId: delivery.eventId,
    event: delivery.event,
    status: delivery.status,
    responseCode: delivery.responseCode,
    attempts: delivery.attempts,
    error: delivery.error,
    createdAt: delivery.createdAt,
    lastAttemptAt: delivery.lastAttemptAt,
    nextAttemptAt: delivery.nextAttemptAt,
    cause: delivery.cause,
    originalId: delivery.originalId,
  };
}

/** `test` and `resend` send one delivery now: exit code 1 unless the receiver took it. */
const undelivered = (delivery: { status: string }) => delivery.status !== 'delivered';

const secretNotice = (result: { secret: string }) =>
  `${formatText(result)}\nCopy the signing secret now: it is shown this once and cannot be shown again.\n`;

export const webhooks: CliResource = {
  name: 'webhooks',
  description: 'signed HTTPS webhooks: record created, updated and deleted events for all or chosen objects',
  commands: {
    create: {
      usage: '--workspace <slug> --name <text> --url <https-url> [--events created,updated,deleted] [--objects a,b]',
      description: 'create a webhook (on); its signing secret is shown this once',
      options: { workspace: { type: 'string' }, name: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' }, objects: { type: 'string' } },
      required: ['workspace', 'name', 'url'],
      async run({ values }, context) {
        const { webhook, secret } = await context.webhooks.create(stringOption(values, 'workspace')!, {
          name: stringOption(values, 'name')!,
          url: stringOption(values, 'url')!,
          events: listOption(values, 'events') ?? 'all',
          objects: listOption(values, 'objects') ?? 'all',
        });
        const { disabledReason: _reason, ...rest } = shown(webhook);
        return { ...rest, secret };
      },
      text: secretNotice,
    },
    update: {
      usage: '<id> [--name <text>] [--url <https-url>] [--events created,updated,deleted|all] [--objects a,b|all]',
      description: 'change a webhook: what is not given stays; new filters apply to changes made from now on',
      positionals: ['id'],
      options: { name: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' }, objects: { type: 'string' } },
      async run({ positionals, values }, context) {
        const changes = { name: stringOption(values, 'name'), url: stringOption(values, 'url'), events: listOption(values, 'events'), objects: listOption(values, 'objects') };
        // Exit 0 for a command that changed nothing would read as done.
        if (Object.values(changes).every((value) => value === undefined)) throw new UsageError('nothing to change: give --name, --url, --events or --objects');
        return shown(await context.webhooks.update(positionals[0]!, changes));
      },
    },
    list: {
      usage: '--workspace <slug>',
      description: "list a workspace's webhooks, with the reason and time (disabledAt) when one is off",
      options: { workspace: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, context) {
        return (await context.webhooks.list(stringOption(values, 'workspace')!)).map((webhook) => ({ ...shown(webhook), disabledAt: webhook.disabledAt }));
      },
    },
    on: {
      usage: '<id>',
      description: 'switch a webhook on (changes made while it was off are not sent)',
      positionals: ['id'],
      async run({ positionals }, context) {
        return shown(await context.webhooks.switch(positionals[0]!, true));
      },
    },
    off: {
      usage: '<id>',
      description: 'switch a webhook off; its waiting deliveries are skipped',
      positionals: ['id'],
      async run({ positionals }, context) {
        return shown(await context.webhooks.switch(positionals[0]!, false));
      },
    },
    'rotate-secret': {
      usage: '<id>',
      description: 'make a new signing secret; the old one signs nothing from now on',
      positionals: ['id'],
      async run({ positionals }, context) {
        return context.webhooks.rotateSecret(positionals[0]!);
      },
      text: secretNotice,
    },
    delete: {
      usage: '<id>',
      description: 'delete a webhook and its deliveries; nothing more is sent to it',
      positionals: ['id'],
      async run({ positionals }, context) {
        return context.webhooks.delete(positionals[0]!);
      },
    },
    test: {
      usage: '<id>',
      description: 'send a webhook.test event now and show its delivery (exit code 1 when it was not delivered)',
      positionals: ['id'],
      async run({ positionals }, context) {
        return shownDelivery(await context.webhooks.test(positionals[0]!));
      },
      failed: undelivered,
    },
    resend: {
      usage: '<deliveryId>',
      description: 'send one delivery again now: same event and payload, a new delivery id, signed with the current secret (exit code 1 when it was not delivered)',
      positionals: ['deliveryId'],
      async run({ positionals }, context) {
        return shownDelivery(await context.webhooks.resend(positionals[0]!));
      },
      failed: undelivered,
    },
    recover: {
      usage: '<webhookId> --since <time> [--until <time>] [--failed-only]',
      description:
        "send again, in log order, the window's record and bulk events the webhook's filters match (also while it was off); --failed-only: only those whose delivery failed; Ctrl-C stops it and prints resumeSince (exit code 1)",
      positionals: ['webhookId'],
      options: { since: { type: 'string' }, until: { type: 'string' }, 'failed-only': { type: 'boolean' } },
      required: ['since'],
      async run({ positionals, values }, context) {
        const until = stringOption(values, 'until');
        // A time that is none (or a day that does not exist) is wrong usage: exit 2 before anything is sent.
        for (const name of ['since', 'until']) {
          const raw = stringOption(values, name);
          const parsed = raw === undefined ? null : parseMoment(raw, { dateOnly: true });
          if (parsed && !parsed.ok) throw new UsageError(momentProblem(`--${name}`, raw!, parsed.problem));
        }
        const progress = process.stderr.isTTY ? (s: { resent: number }) => process.stderr.write(`\rresent ${s.resent}`) : undefined;
        // Ctrl-C stops after the deliveries under way; the summary says where to go on from.
        const stopping = new AbortController();
        const stop = () => stopping.abort();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        try {
          const summary = await context.webhooks.recover(
            positionals[0]!,
            { since: stringOption(values, 'since')!, ...(until === undefined ? {} : { until }), failedOnly: values['failed-only'] === true },
            progress,
            stopping.signal,
          );
          if (progress) process.stderr.write('\n');
          if (summary.resumeSince) process.stderr.write(`interrupted: run again with --since ${summary.resumeSince} to go on\n`);
          return summary;
        } finally {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
        }
      },
      failed(summary: { resumeSince?: string }) {
        return summary.resumeSince !== undefined;
      },
    },
    listen,
    'replay-parked': {
      usage: '',
      description: 'send again the webhook events set aside after repeated fan-out failures (once the cause is fixed)',
      async run(_input, context) {
        return context.webhooks.replayParked();
      },
    },
    deliveries: {
      usage: '<id>',
      description: 'the last 50 deliveries of a webhook, newest first',
      positionals: ['id'],
      async run({ positionals }, context) {
        return (await context.webhooks.deliveries(positionals[0]!)).map(shownDelivery);
      },
    },
  },
};

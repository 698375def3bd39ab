import { createLoopbackSender } from '../webhooks/loopbackSender.js';
import { forwardDeliveries, type Forwarded } from '../webhooks/listen.js';
import { listOption, stringOption, type CliCommand } from './context.js';

/**
 * `csr webhooks listen --forward-to` (issue 29): a temporary webhook of the workspace whose
 * deliveries this process pulls from the webhook store and posts, signed, to a local address;
 * one line per delivery; Ctrl-C (or SIGTERM) removes the webhook. The running service's fan-out
 * makes the deliveries, as for any webhook; no dispatcher sends them (webhooks/listen.ts).
 */

function line(forwarded: Forwarded): string {
  const outcome = forwarded.status === 'delivered' ? '' : `  ${forwarded.status}: ${forwarded.error ?? ''}`;
  return `${forwarded.at}  ${forwarded.event}  ${forwarded.responseCode ?? '---'}  ${forwarded.ms} ms  delivery ${forwarded.deliveryId}  event ${forwarded.eventId}${outcome}\n`;
}

export const listen: CliCommand = {
  usage: '--workspace <slug> --forward-to <http://localhost:3000/hooks> [--events created,updated,deleted] [--objects a,b]',
  description: "receive the workspace's webhook events on this machine: signed with a temporary secret and posted to a local address, one line each; Ctrl-C stops and removes the temporary webhook",
  options: { workspace: { type: 'string' }, 'forward-to': { type: 'string' }, events: { type: 'string' }, objects: { type: 'string' } },
  required: ['workspace', 'forward-to'],
  streams: true,
  async run({ values, stdout }, context) {
    const { webhook, secret } = await context.webhooks.createListener(stringOption(values, 'workspace')!, {
      forwardTo: stringOption(values, 'forward-to')!,
      events: listOption(values, 'events') ?? 'all',
      objects: listOption(values, 'objects') ?? 'all',
    });
    const stopping = new AbortController();
    const stop = () => stopping.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    const sender = createLoopbackSender({ timeoutMs: context.config.webhookTimeoutMs });
    try {
      stdout.write(
        `Forwarding the events of workspace ${stringOption(values, 'workspace')} to ${webhook.url} (temporary webhook ${webhook.id}).\n` +
          `Signing secret (this session only): ${secret}\n` +
          'Ready. Ctrl-C stops and removes the temporary webhook.\n',
      );
      const deps = { webhooks: context.backends.webhooks, sender, clock: () => new Date(), retryDelaysMs: context.config.webhookRetryDelaysMs, timeoutMs: context.config.webhookTimeoutMs };
      await forwardDeliveries(deps, webhook.id, stopping.signal, (forwarded) => stdout.write(line(forwarded)));
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      sender.close();
      await context.webhooks.delete(webhook.id);
      stdout.write(`Stopped: temporary webhook ${webhook.id} removed.\n`);
    }
    return null;
  },
};

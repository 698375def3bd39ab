import type { Delivery } from '../../src/webhooks/port.js';
import { startReceiver, RECEIVER_CA_FILE, type Receiver } from './receiver.js';
import { client, startTestService, type TestService, type TestWorkspace } from './service.js';
import { eventually } from './until.js';

/**
 * What every webhook suite stands on: a real HTTPS receiver on loopback, a service that trusts its
 * certificate (and may target loopback unless `env` says otherwise), one workspace, and an API
 * client with a key of it.
 */
export interface WebhookHarness {
  svc: TestService;
  receiver: Receiver;
  ws: TestWorkspace;
  api: ReturnType<typeof client>;
  /** A webhook to `path` on the receiver, made as `csr webhooks create` makes it; named after the path unless told. */
  hook(path: string, options?: { name?: string; events?: string[]; objects?: string[] }): ReturnType<TestService['webhooks']['create']>;
  /** The webhook's deliveries (newest first) once their statuses satisfy `done`; fails after 20 s. */
  deliveriesWhen(webhookId: string, done: (statuses: string[]) => boolean): Promise<Delivery[]>;
  close(): Promise<void>;
}

export async function startWebhookHarness(
  env: Record<string, string> = {},
  options: { clock?: () => Date; keyName?: string } = {},
): Promise<WebhookHarness> {
  const receiver = await startReceiver();
  const svc = await startTestService(
    { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE, ...env },
    options.clock ? { clock: options.clock } : {},
  );
  const ws = await svc.workspace();
  const api = client(svc, (await ws.key(options.keyName ? { name: options.keyName } : {})).key);
  return {
    svc,
    receiver,
    ws,
    api,
    hook: (path, { name = path, ...filters } = {}) => svc.webhooks.create(ws.slug, { name, url: `${receiver.origin}${path}`, ...filters }),
    deliveriesWhen: (webhookId, done) =>
      eventually(() => svc.webhooks.deliveries(webhookId), (deliveries) => done(deliveries.map((delivery) => delivery.status)), 20_000, 'the deliveries\' statuses'),
    async close() {
      await svc.stop();
      await receiver.close();
    },
  };
}

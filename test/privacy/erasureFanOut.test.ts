import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStream } from '../../src/events/records.js';
import { announceServer } from '../../src/runtime/serverPids.js';
import type { WebhookStore } from '../../src/webhooks/port.js';
import { csrTool } from '../support/cli.js';
import { RECEIVER_CA_FILE, startReceiver, type Receiver } from '../support/receiver.js';
import { client, startTestService, type TestService } from '../support/service.js';
import { eventually } from '../support/until.js';

/**
 * An erasure while the webhook fan-out is building a delivery of the person's record from the
 * read model as it was before the erasure: that delivery must not be stored after the erasure has
 * redacted the stored payloads, or its values stay on disk. The fan-out's store is held here
 * at the moment it would store that delivery, and let go once `csr privacy erase` has returned
 * or 2 s after its erasure is in the log, whichever comes first: an erasure that does not wait for the fan-out returns
 * first and leaves the values behind; one that waits redacts after the delivery is stored.
 */

const EMAIL = 'held.back@example.com';
const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: RECEIVER_CA_FILE };
let svc: TestService;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  svc = await startTestService(ENV);
});
afterAll(async () => {
  await svc?.stop();
  await receiver?.close();
});

describe('csr privacy erase while the fan-out builds a delivery of the person', () => {
  it('redacts the delivery the fan-out stores after it began: no payload keeps the email', async () => {
    const ws = await svc.workspace('held');
    const api = client(svc, (await ws.key()).key);
    const { webhook } = await svc.webhooks.create(ws.slug, { name: 'crm', url: `${receiver.origin}/hook`, objects: ['contacts'] });
    const created = await api.post('/api/v1/contacts', { firstName: 'Held', lastName: 'Back', email: EMAIL });
    expect(created.status).toBe(201);
    const contact: string = created.body.ids[0];
    await receiver.waitFor('/hook', (requests) => requests.some((request) => request.body?.event === 'contacts.created'));

    // The next delivery showing the email waits at the store until it is let go.
    const store = svc.service.backends.webhooks as WebhookStore;
    const enqueue = store.enqueue.bind(store);
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    let once = false;
    store.enqueue = async (items, at, options) => {
      if (!once && items.some(({ payload }) => JSON.stringify(payload.data).includes(EMAIL))) {
        once = true;
        holding();
        await gate;
      }
      return enqueue(items, at, options);
    };

    expect((await api.patch(`/api/v1/contacts/${contact}`, { role: 'Buyer' })).status).toBe(200);
    await held;
    // This test process is the server on this DATA_DIR, as a started server says so.
    const announced = announceServer(svc.dataDir);
    try {
      const erasing = csrTool(svc.dataDir, ENV).json<{ erased: unknown[]; webhooksBehind?: true }>('privacy', 'erase', '--workspace', ws.slug, '--contact', contact);
      // Let go once the command has returned, or 2 s after its erasure is in the log if it has not
      // (it waits for the fan-out): a slow machine can only make the first case let go earlier.
      const erasedInLog = eventually(() => svc.service.backends.events.readStream(recordStream(contact)), (events) => events.some((event) => event.type === 'RecordErased'), 60_000, 'the erasure in the log');
      await Promise.race([erasing.catch(() => undefined), erasedInLog.then(() => new Promise((resolve) => setTimeout(resolve, 2_000)))]);
      letGo();
      const result = await erasing;
      expect(result.erased.length).toBe(1);
      expect(result.webhooksBehind).toBeUndefined();
    } finally {
      letGo();
      announced.withdraw();
    }

    // created, the held update, and the erasure's own update (its fields null).
    const deliveries = await eventually(() => svc.webhooks.deliveries(webhook.id), (list) => list.length >= 3, 20_000, 'three deliveries');
    const payloads = await Promise.all(deliveries.map((delivery) => store.payloadById(delivery.eventId)));
    expect(payloads.map((payload) => payload?.event)).toEqual(['contacts.updated', 'contacts.updated', 'contacts.created']);
    expect(payloads.filter((payload) => JSON.stringify(payload).includes(EMAIL))).toEqual([]);
  }, 90_000);
});

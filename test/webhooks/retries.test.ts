import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhook } from '../../src/webhooks/signature.js';
import { startWebhookHarness, type WebhookHarness } from '../support/webhookHarness.js';

/**
 * The delivery state machine of spec 3.2 against a real HTTPS receiver, on a shortened but
 * distinguishable schedule (the order of the delays is checked) and a 2 s answer time: the
 * receiver runs in this process, and on a busy machine its answers (a handshake first) took
 * longer than the 400 ms this suite once allowed, failing attempts meant to succeed.
 */

const DELAYS = [100, 200, 300, 400, 500];
const TIMEOUT_MS = 2_000;

let h: WebhookHarness;

beforeAll(async () => {
  h = await startWebhookHarness({ WEBHOOK_RETRY_DELAYS: DELAYS.map((ms) => `${ms}ms`).join(','), WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms` });
});

afterAll(async () => {
  await h?.close();
});

const hookAt = (path: string) => h.hook(path, { objects: ['tasks'] });

async function createTask(subject: string) {
  const created = await h.api.post('/api/v1/tasks', { subject, status: 'Not started' });
  expect(created.status).toBe(201);
  return created.body.ids[0] as string;
}

describe('retries (spec 3.2)', () => {
  it('a failing receiver gets 6 attempts, spaced by the schedule in order, with the same data, new sentAt and signature; then Failed', async () => {
    const { webhook, secret } = await hookAt('/always-500');
    h.receiver.on('/always-500', 500);
    await createTask('Retention 95%');
    const attempts = await h.receiver.waitFor('/always-500', (requests) => requests.length === 6);
    const [failed] = await h.deliveriesWhen(webhook.id, (statuses) => statuses[0] === 'failed');
    expect(failed).toMatchObject({ status: 'failed', attempts: 6, responseCode: 500, error: 'receiver answered 500', nextAttemptAt: null });

    const gaps = attempts.slice(1).map((attempt, index) => attempt.receivedAt - attempts[index]!.receivedAt);
    // Each gap is at least its own delay of the (growing) schedule: the delays are taken in order,
    // not all the first one. No upper bound: a busy machine may only make a gap longer.
    gaps.forEach((gap, index) => expect(gap).toBeGreaterThanOrEqual(DELAYS[index]! - 5));

    const ids = new Set(attempts.map((attempt) => attempt.body.id));
    expect(ids.size).toBe(1);
    expect(new Set(attempts.map((attempt) => JSON.stringify(attempt.body.data))).size).toBe(1);
    expect(new Set(attempts.map((attempt) => attempt.body.sentAt)).size).toBe(6);
    expect(new Set(attempts.map((attempt) => attempt.headers['x-svc-signature'])).size).toBe(6);
    expect(new Set(attempts.map((attempt) => attempt.headers['x-svc-delivery'])).size).toBe(1);
    for (const attempt of attempts) expect(checkWebhook(attempt.rawBody, attempt.headers, secret).ok).toBe(true);

    // Nothing more is sent after Failed.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(h.receiver.received('/always-500')).toHaveLength(6);
  });

  it('a success on the 3rd attempt is delivered, and no attempt follows it', async () => {
    const { webhook } = await hookAt('/third-time');
    h.receiver.on('/third-time', () => (h.receiver.received('/third-time').length >= 3 ? 200 : 503));
    await createTask('NPS 60');
    const [delivered] = await h.deliveriesWhen(webhook.id, (statuses) => statuses[0] === 'delivered');
    expect(delivered).toMatchObject({ attempts: 3, responseCode: 200, error: null, nextAttemptAt: null });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(h.receiver.received('/third-time')).toHaveLength(3);
  });

  it('a redirect is a failure and is never followed', async () => {
    const { webhook } = await hookAt('/moved');
    h.receiver.on('/moved', { redirect: `${h.receiver.origin}/redirect-target` });
    await createTask('Expansion');
    await h.receiver.waitFor('/moved', (requests) => requests.length >= 2);
    const [delivery] = await h.svc.webhooks.deliveries(webhook.id);
    expect(delivery).toMatchObject({ responseCode: 302, error: 'redirect (302) not followed' });
    expect(h.receiver.received('/redirect-target')).toHaveLength(0);
  });

  it('no answer within the timeout is a failure, retried', async () => {
    const { webhook } = await hookAt('/silent');
    h.receiver.on('/silent', (request) => (h.receiver.received('/silent').indexOf(request) === 0 ? 'hang' : 204));
    const changed = Date.now();
    await createTask('Adoption');
    const [delivered] = await h.deliveriesWhen(webhook.id, (statuses) => statuses[0] === 'delivered');
    expect(delivered).toMatchObject({ attempts: 2, responseCode: 204 });
    const attempts = h.receiver.received('/silent');
    // The first attempt began after the change, waited out the timeout, then the first delay.
    // (Counted from the change, not from the first request's arrival: a slow handshake delays
    // that arrival but not the start of the attempt's timeout.)
    expect(attempts[1]!.receivedAt - changed).toBeGreaterThanOrEqual(TIMEOUT_MS + DELAYS[0]! - 5);
    expect(attempts[1]!.receivedAt - attempts[0]!.receivedAt).toBeGreaterThanOrEqual(DELAYS[0]! - 5);
  });
});

describe('a receiver that never answers', () => {
  // Its own service and receiver: the black hole's open requests stay apart from the other tests'.
  let slow: WebhookHarness;

  beforeAll(async () => {
    slow = await startWebhookHarness({ WEBHOOK_RETRY_DELAYS: DELAYS.map((ms) => `${ms}ms`).join(','), WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms` });
  });

  afterAll(async () => {
    await slow?.close();
  });

  it('does not hold back another webhook', async () => {
    const { webhook: blackHole } = await slow.hook('/black-hole', { objects: ['tasks'] });
    slow.receiver.on('/black-hole', 'hang');
    const { webhook: healthy } = await slow.hook('/healthy', { objects: ['tasks'] });
    for (let i = 0; i < 30; i++) expect((await slow.api.post('/api/v1/tasks', { subject: `Goal ${i}`, status: 'Not started' })).status).toBe(201);
    const delivered = (statuses: string[]) => statuses.filter((status) => status === 'delivered').length;
    await slow.deliveriesWhen(healthy.id, (statuses) => delivered(statuses) === 30);
    // A black-hole delivery fails after 6 timeouts and the 5 delays (13.5 s). Had the healthy ones
    // waited behind the black hole, some of its deliveries would have failed before they arrived.
    const stuck = await slow.svc.webhooks.deliveries(blackHole.id);
    expect(stuck).toHaveLength(30);
    expect(stuck.filter((delivery) => delivery.status === 'failed')).toEqual([]);
  });
});

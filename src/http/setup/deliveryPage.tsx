import type { Hono } from 'hono';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { ownDelivery } from './forms.js';
import { Csrf, Page, time } from './layout.js';

/**
 * One delivery: its payload and the headers its last attempt was sent with (the timestamp and
 * signature differ per attempt; the store keeps the last ones), and "resend" (as `csr webhooks
 * resend`).
 */
export function deliveryRoutes(app: Hono<SetupEnv>, deps: SetupPageDeps): void {
  app.get('/deliveries/:id', async (c) => {
    const { delivery, webhook } = await ownDelivery(c, deps, c.req.param('id'));
    const payload = await deps.webhooks.payloadById(delivery.eventId);
    const signedIn = c.get('signedIn');
    const resent = /^\d{1,16}$/.exec(c.req.query('resent') ?? '')?.[0];
    return c.html(
      <Page title={`Delivery ${delivery.id}`} section="/setup/api" signedIn={signedIn} notice={resent ? `Sent again as delivery ${resent}.` : undefined}>
        <p>
          <a href={`/setup/webhooks/${webhook.id}`}>← Webhook {webhook.name}</a>
        </p>
        <dl>
          <dt>Status</dt>
          <dd>
            {delivery.status}, {delivery.attempts} attempt(s), response {delivery.responseCode ?? '—'}
            {delivery.error ? ` — ${delivery.error}` : ''}
          </dd>
          <dt>Created / last attempt / next attempt</dt>
          <dd>
            {time(delivery.createdAt)} / {time(delivery.lastAttemptAt)} / {time(delivery.nextAttemptAt)}
          </dd>
          {delivery.cause ? (
            <>
              <dt>Cause</dt>
              <dd>
                {delivery.cause}
                {delivery.originalId !== null ? <> of <a href={`/setup/deliveries/${delivery.originalId}`}>delivery {delivery.originalId}</a></> : null}
              </dd>
            </>
          ) : null}
        </dl>
        <h2>{delivery.lastSentAt ? 'Headers of the last attempt' : 'Headers (not sent yet)'}</h2>
        <pre>
          {[
            'Content-Type: application/json',
            `X-SVC-Event: ${delivery.event}`,
            `X-SVC-Delivery: ${delivery.id}`,
            `X-SVC-Timestamp: ${delivery.lastSentAt ?? '(the time of the first attempt)'}`,
            `X-SVC-Signature: ${delivery.lastSignature ?? '(computed over the first attempt\'s exact body)'}`,
          ].join('\n')}
        </pre>
        <h2>{delivery.lastSentAt ? 'Payload of the last attempt' : 'Payload'}</h2>
        {payload ? (
          <pre>
            {JSON.stringify(
              { id: payload.id, event: payload.event, object: payload.object, source: payload.source, occurredAt: payload.occurredAt, sentAt: delivery.lastSentAt ?? '(the time of the first attempt)', data: payload.data },
              null,
              2,
            )}
          </pre>
        ) : (
          <p>The event of this delivery is no longer kept.</p>
        )}
        {payload ? (
          <form method="post" action={`/setup/deliveries/${delivery.id}/resend`}>
            <Csrf token={signedIn.csrfToken} />
            <button type="submit">Resend now</button>
          </form>
        ) : null}
      </Page>,
    );
  });

  app.post('/deliveries/:id/resend', async (c) => {
    const { delivery } = await ownDelivery(c, deps, c.req.param('id'));
    const resent = await c.get('services').webhooks.resend(String(delivery.id));
    return c.redirect(`/setup/deliveries/${resent.id}?resent=${resent.id}`, 303);
  });
}

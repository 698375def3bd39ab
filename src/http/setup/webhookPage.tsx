import type { Context, Hono } from 'hono';
import type { Delivery, Webhook } from '../../webhooks/port.js';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { formText, ownWebhook } from './forms.js';
import { Csrf, Page, ShownOnce, time } from './layout.js';
import { OnOff } from './webhooks.js';

/** One webhook: on/off, rotate its secret, send the test event, and its last 50 deliveries. */

interface Extras {
  secret?: string;
  tested?: Delivery;
  notice?: string;
}

export function DeliveryRows(props: { deliveries: Delivery[] }) {
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Event</th>
          <th scope="col">Status</th>
          <th scope="col">Response</th>
          <th scope="col">Attempts</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {props.deliveries.length === 0 ? (
          <tr>
            <td colspan={6}>No deliveries yet.</td>
          </tr>
        ) : null}
        {props.deliveries.map((delivery) => (
          <tr>
            <td>
              <a href={`/setup/deliveries/${delivery.id}`}>{time(delivery.lastAttemptAt ?? delivery.createdAt)}</a>
            </td>
            <td>{delivery.event}</td>
            <td>{delivery.status}</td>
            <td>{delivery.responseCode ?? '—'}</td>
            <td>{delivery.attempts}</td>
            <td>{delivery.error ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Actions(props: { webhook: Webhook; csrfToken: string }) {
  const { webhook, csrfToken } = props;
  return (
    <p>
      <form method="post" action={`/setup/webhooks/${webhook.id}/switch`} class="inline">
        <Csrf token={csrfToken} />
        <input type="hidden" name="on" value={webhook.enabled ? 'no' : 'yes'} />
        <button type="submit">{webhook.enabled ? 'Switch off' : 'Switch on'}</button>
      </form>{' '}
      <form method="post" action={`/setup/webhooks/${webhook.id}/rotate-secret`} class="inline">
        <Csrf token={csrfToken} />
        <button type="submit">Rotate secret</button>
      </form>{' '}
      <form method="post" action={`/setup/webhooks/${webhook.id}/test`} class="inline">
        <Csrf token={csrfToken} />
        <button type="submit">Send test event</button>
      </form>
    </p>
  );
}

async function render(c: Context<SetupEnv>, webhook: Webhook, extras: Extras = {}) {
  const signedIn = c.get('signedIn');
  const deliveries = await c.get('services').webhooks.deliveries(webhook.id);
  const tested = extras.tested;
  return c.html(
    <Page title={`Webhook ${webhook.name}`} section="/setup/api" signedIn={signedIn} notice={extras.notice}>
      <p>
        <a href="/setup/api">← API & Webhooks</a>
      </p>
      <dl>
        <dt>URL</dt>
        <dd>{webhook.url}</dd>
        <dt>Events</dt>
        <dd>{webhook.events === 'all' ? 'all' : webhook.events.join(', ')}</dd>
        <dt>Objects</dt>
        <dd>{webhook.objects === 'all' ? 'all' : webhook.objects.join(', ')}</dd>
        <dt>State</dt>
        <dd>
          <OnOff webhook={webhook} />
        </dd>
      </dl>
      {extras.secret ? <ShownOnce id="new-secret" label="The new signing secret (the old one signs nothing from now on)" value={extras.secret} /> : null}
      {tested ? (
        <p class="notice" role="status">
          Test event: {tested.status}
          {tested.responseCode !== null ? `, response ${tested.responseCode}` : ''}
          {tested.error ? ` — ${tested.error}` : ''}
        </p>
      ) : null}
      <Actions webhook={webhook} csrfToken={signedIn.csrfToken} />
      <h2>Last 50 deliveries</h2>
      <DeliveryRows deliveries={deliveries} />
    </Page>,
  );
}

export function webhookRoutes(app: Hono<SetupEnv>, deps: SetupPageDeps): void {
  app.get('/webhooks/:id', async (c) => render(c, await ownWebhook(c, deps, c.req.param('id'))));

  app.post('/webhooks/:id/switch', async (c) => {
    const webhook = await ownWebhook(c, deps, c.req.param('id'));
    const on = formText(c, 'on') === 'yes';
    const changed = await c.get('services').webhooks.switch(webhook.id, on);
    return render(c, changed, { notice: on ? 'The webhook is on.' : 'The webhook is off: its waiting deliveries are skipped.' });
  });

  app.post('/webhooks/:id/rotate-secret', async (c) => {
    const webhook = await ownWebhook(c, deps, c.req.param('id'));
    const { secret } = await c.get('services').webhooks.rotateSecret(webhook.id);
    return render(c, webhook, { secret });
  });

  app.post('/webhooks/:id/test', async (c) => {
    const webhook = await ownWebhook(c, deps, c.req.param('id'));
    const tested = await c.get('services').webhooks.test(webhook.id);
    return render(c, webhook, { tested });
  });
}

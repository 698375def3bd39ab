import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Delivery, Webhook } from '../../webhooks/port.js';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { allOrList, errorStatus, formList, formText, ownWebhook, refusedInput, type FormState } from './forms.js';
import { WEBHOOK_FIELDS } from './apiRoutes.js';
import { Csrf, Page, ShownOnce, time } from './layout.js';
import { OnOff, WebhookForm } from './webhooks.js';
import { Table } from './table.js';

/** One webhook: on/off, rotate its secret, send the test event, and its last 50 deliveries. */

interface Extras {
  edit?: FormState;
  secret?: string;
  tested?: Delivery;
  notice?: string;
}

export function DeliveryRows(props: { deliveries: Delivery[] }) {
  return (
    <Table columns={['Time', 'Event', 'Status', 'Response', 'Attempts', 'Error']} empty={props.deliveries.length === 0 ? 'No deliveries yet.' : undefined}>
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
    </Table>
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

const filterList = (value: 'all' | string[]) => (value === 'all' ? [] : value);

async function render(c: Context<SetupEnv>, webhook: Webhook, extras: Extras = {}, status = 200) {
  const signedIn = c.get('signedIn');
  const [deliveries, objects] = await Promise.all([c.get('services').webhooks.deliveries(webhook.id), c.get('services').objects.listObjects(signedIn.workspace.slug)]);
  const edit = extras.edit ?? { values: { name: webhook.name, url: webhook.url, events: filterList(webhook.events), objects: filterList(webhook.objects) }, errors: {} };
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
      <WebhookForm action={`/setup/webhooks/${webhook.id}/edit`} title="Edit" button="Save changes" objects={objects.map((object) => object.key)} csrfToken={signedIn.csrfToken} state={edit} />
    </Page>,
    status as ContentfulStatusCode,
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

  app.post('/webhooks/:id/edit', async (c) => {
    const webhook = await ownWebhook(c, deps, c.req.param('id'));
    const values = { name: formText(c, 'name'), url: formText(c, 'url'), events: formList(c, 'events'), objects: formList(c, 'objects') };
    try {
      const changed = await c.get('services').webhooks.update(webhook.id, { ...values, events: allOrList(values.events), objects: allOrList(values.objects) });
      return render(c, changed, { notice: 'Saved. New filters apply to changes made from now on.' });
    } catch (error) {
      return render(c, webhook, { edit: { values, errors: refusedInput(error, WEBHOOK_FIELDS, 'name') } }, errorStatus);
    }
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

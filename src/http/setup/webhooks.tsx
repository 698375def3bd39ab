import { EVENT_KINDS, type Webhook } from '../../webhooks/port.js';
import type { FormState } from './forms.js';
import { Choices, Csrf, Field, ShownOnce } from './layout.js';
import { Table } from './table.js';

/** The webhooks part of "API & Webhooks": the table and the create form. */

export interface WebhooksView {
  webhooks: Webhook[];
  objects: string[];
  csrfToken: string;
  create?: FormState | undefined;
  created?: { webhook: Webhook; secret: string } | undefined;
}

const list = (value: 'all' | string[]) => (value === 'all' ? 'all' : value.join(', '));

export function OnOff(props: { webhook: Webhook }) {
  return props.webhook.enabled ? <span>on</span> : <span class="off">off{props.webhook.disabledReason ? ` — ${props.webhook.disabledReason}` : ''}</span>;
}

export function WebhooksSection(props: WebhooksView) {
  const values = props.create?.values ?? {};
  const errors = props.create?.errors ?? {};
  return (
    <section aria-labelledby="webhooks">
      <h2 id="webhooks">Webhooks</h2>
      {props.created ? (
        <>
          <p class="notice" role="status">
            Webhook <a href={`/setup/webhooks/${props.created.webhook.id}`}>{props.created.webhook.name}</a> created; it is on.
          </p>
          <ShownOnce id="new-secret" label="Its signing secret" value={props.created.secret} />
        </>
      ) : null}
      <Table columns={['Name', 'URL', 'Events', 'Objects', 'State']} empty={props.webhooks.length === 0 ? 'No webhooks yet.' : undefined}>
        {props.webhooks.map((webhook) => (
          <tr>
            <td>
              <a href={`/setup/webhooks/${webhook.id}`}>{webhook.name}</a>
            </td>
            <td>{webhook.url}</td>
            <td>{list(webhook.events)}</td>
            <td>{list(webhook.objects)}</td>
            <td>
              <OnOff webhook={webhook} />
            </td>
          </tr>
        ))}
      </Table>
      <WebhookForm action="/setup/webhooks" title="Create a webhook" button="Create webhook" objects={props.objects} csrfToken={props.csrfToken} state={{ values, errors }} />
    </section>
  );
}

/** Create and edit: the same fields, checked by the same use case. */
export function WebhookForm(props: { action: string; title: string; button: string; objects: string[]; csrfToken: string; state: FormState }) {
  const { values, errors } = props.state;
  return (
    <form method="post" action={props.action} class="card">
      <h3>{props.title}</h3>
      <Csrf token={props.csrfToken} />
      <Field form="webhook" name="name" label="Name" value={values.name as string | undefined} error={errors.name} />
      <Field form="webhook" name="url" label="URL (https)" value={values.url as string | undefined} error={errors.url} size={50} hint="a public HTTPS address; private and loopback addresses are refused" />
      <Choices name="events" legend="Events" options={EVENT_KINDS} chosen={[values.events ?? []].flat()} error={errors.events} />
      <Choices name="objects" legend="Objects" options={props.objects} chosen={[values.objects ?? []].flat()} error={errors.objects} />
      <button type="submit">{props.button}</button>
    </form>
  );
}

import type { ApiKey } from '../../setup/port.js';
import type { FormState } from './forms.js';
import { Choices, Csrf, Field, ShownOnce, time } from './layout.js';
import { Table } from './table.js';

/** The API keys part of "API & Webhooks": the table, create, rename; revoke asks first (apiRoutes). */

export interface KeysView {
  keys: ApiKey[];
  objects: string[];
  csrfToken: string;
  create?: FormState | undefined;
  created?: { name: string; key: string } | undefined;
  rename?: { id: string; state: FormState } | undefined;
}

const objectsOf = (key: ApiKey) => (key.objects === 'all' ? 'all' : key.objects.join(', '));

export function KeysSection(props: KeysView) {
  const values = props.create?.values ?? {};
  const errors = props.create?.errors ?? {};
  return (
    <section aria-labelledby="keys">
      <h2 id="keys">API keys</h2>
      {props.created ? <ShownOnce id="new-key" label={`The new key "${props.created.name}"`} value={props.created.key} /> : null}
      <Table columns={['Name', 'Access', 'Objects', 'Created', 'Last used', 'Revoked', 'Actions']} empty={props.keys.length === 0 ? 'No API keys yet.' : undefined}>
        {props.keys.map((key) => {
          const renaming = props.rename?.id === key.id ? props.rename.state : undefined;
          return (
            <tr>
              <td>{key.name}</td>
              <td>{key.access}</td>
              <td>{objectsOf(key)}</td>
              <td>{time(key.createdAt)}</td>
              <td>{time(key.lastUsedAt)}</td>
              <td>{time(key.revokedAt)}</td>
              <td>
                <form method="post" action={`/setup/keys/${key.id}/rename`} class="inline">
                  <Csrf token={props.csrfToken} />
                  <label>
                    New name <input name="name" value={(renaming?.values.name as string | undefined) ?? key.name} size={14} aria-invalid={renaming?.errors.name ? 'true' : undefined} />
                  </label>{' '}
                  <button type="submit">Rename</button>
                  {renaming?.errors.name ? <strong class="error">{renaming.errors.name}</strong> : null}
                </form>{' '}
                {key.revokedAt === null ? <a href={`/setup/keys/${key.id}/revoke`}>Revoke…</a> : null}
              </td>
            </tr>
          );
        })}
      </Table>
      <form method="post" action="/setup/keys" class="card">
        <h3>Create an API key</h3>
        <Csrf token={props.csrfToken} />
        <Field form="key" name="name" label="Name" value={values.name as string | undefined} error={errors.name} hint="who or what uses it, e.g. Zapier" />
        <p>
          <label>
            <input type="checkbox" name="readOnly" value="yes" checked={values.readOnly === 'yes'} /> Read only
          </label>
        </p>
        <Choices name="objects" legend="Objects it may access" options={props.objects} chosen={[values.objects ?? []].flat()} error={errors.objects} />
        <button type="submit">Create key</button>
      </form>
    </section>
  );
}

export function RevokeConfirm(props: { apiKey: ApiKey; csrfToken: string }) {
  return (
    <form method="post" action={`/setup/keys/${props.apiKey.id}/revoke`} class="card">
      <Csrf token={props.csrfToken} />
      <p>
        Revoke the key <strong>{props.apiKey.name}</strong>? It stops working on the next request, and this cannot be undone.
      </p>
      <button type="submit" class="danger">
        Revoke the key
      </button>{' '}
      <a href="/setup/api">Cancel</a>
    </form>
  );
}

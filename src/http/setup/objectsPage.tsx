import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { SetupEnv } from './deps.js';
import { errorStatus, formText, refusedInput, type FormState } from './forms.js';
import { Csrf, Field, Page } from './layout.js';
import { Table } from './table.js';

/** The Object Manager: the workspace's objects, and adding one (as `csr objects`); fields in fieldsPage. */

async function renderObjects(c: Context<SetupEnv>, create?: FormState, status = 200) {
  const signedIn = c.get('signedIn');
  const objects = await c.get('services').objects.listObjects(signedIn.workspace.slug);
  const values = create?.values ?? {};
  const errors = create?.errors ?? {};
  return c.html(
    <Page title="Object Manager" section="/setup/objects" signedIn={signedIn}>
      <Table columns={['Object', 'Key', 'Fields', 'Record name', 'Defined by']}>
        {objects.map((object) => (
          <tr>
            <td>
              <a href={`/setup/objects/${object.key}`}>{object.label}</a>
            </td>
            <td>
              <code>{object.key}</code>
            </td>
            <td>{object.fields}</td>
            <td>{object.recordName.join(' ')}</td>
            <td>{object.custom ? 'this workspace' : 'default'}</td>
          </tr>
        ))}
      </Table>
      <form method="post" action="/setup/objects" class="card">
        <h2>Add an object</h2>
        <Csrf token={signedIn.csrfToken} />
        <Field form="object" name="key" label="Key" value={values.key as string | undefined} error={errors.key} hint="lowercase, e.g. projects" />
        <Field form="object" name="name" label="Name" value={values.name as string | undefined} error={errors.name} hint="e.g. Projects" />
        <button type="submit">Add object</button>
      </form>
    </Page>,
    status as ContentfulStatusCode,
  );
}

const OBJECT_FIELDS = { name: /name/, key: /key|object/ };

export function objectRoutes(app: Hono<SetupEnv>): void {
  app.get('/objects', (c) => renderObjects(c));
  app.post('/objects', async (c) => {
    const values = { key: formText(c, 'key').trim(), name: formText(c, 'name') };
    try {
      const created = await c.get('services').objects.createObject(c.get('signedIn').workspace.slug, values.key, { name: values.name });
      return c.redirect(`/setup/objects/${created.key}`, 303);
    } catch (error) {
      return renderObjects(c, { values, errors: refusedInput(error, OBJECT_FIELDS, 'key') }, errorStatus);
    }
  });
}

import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { definableFormats } from '../../schema/schemaDecider.js';
import type { SetupEnv } from './deps.js';
import { errorStatus, formText, refusedInput, type FormState } from './forms.js';
import { Csrf, Field, Page } from './layout.js';

/** The Object Manager: objects, and per object its fields; as `csr objects` and `csr fields`. */

const yes = (flag: boolean) => (flag ? 'yes' : 'no');

async function renderObjects(c: Context<SetupEnv>, create?: FormState, status = 200) {
  const signedIn = c.get('signedIn');
  const objects = await c.get('services').objects.listObjects(signedIn.workspace.slug);
  const values = create?.values ?? {};
  const errors = create?.errors ?? {};
  return c.html(
    <Page title="Object Manager" section="/setup/objects" signedIn={signedIn}>
      <table>
        <thead>
          <tr>
            <th scope="col">Object</th>
            <th scope="col">Key</th>
            <th scope="col">Fields</th>
            <th scope="col">Record name</th>
            <th scope="col">Defined by</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
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

async function renderFields(c: Context<SetupEnv>, object: string, add?: FormState, status = 200, refused?: string) {
  const signedIn = c.get('signedIn');
  const slug = signedIn.workspace.slug;
  const [fields, objects] = await Promise.all([c.get('services').objects.listFields(slug, object), c.get('services').objects.listObjects(slug)]);
  const label = objects.find((candidate) => candidate.key === object)?.label ?? object;
  const values = add?.values ?? {};
  const errors = add?.errors ?? {};
  return c.html(
    <Page title={`Fields of ${label}`} section="/setup/objects" signedIn={signedIn}>
      <p>
        <a href="/setup/objects">← Object Manager</a>
      </p>
      {refused ? (
        <p class="error" role="alert">
          {refused}
        </p>
      ) : null}
      <table>
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Key</th>
            <th scope="col">Format and options</th>
            <th scope="col">Required</th>
            <th scope="col">Personal</th>
            <th scope="col">Active</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {fields.map((field) => (
            <tr>
              <td>{field.label}</td>
              <td>
                <code>{field.key}</code>
              </td>
              <td>{field.format}</td>
              <td>{yes(field.required)}</td>
              <td>{yes(field.personal)}</td>
              <td>{yes(field.active)}</td>
              <td>
                {field.custom ? (
                  <form method="post" action={`/setup/objects/${object}/fields/${field.key}/${field.active ? 'deactivate' : 'reactivate'}`} class="inline">
                    <Csrf token={signedIn.csrfToken} />
                    <button type="submit">{field.active ? 'Deactivate' : 'Reactivate'}</button>
                  </form>
                ) : (
                  <span class="muted">default field</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form method="post" action={`/setup/objects/${object}/fields`} class="card">
        <h2>Add a field</h2>
        <Csrf token={signedIn.csrfToken} />
        <Field form="field" name="key" label="Key" value={values.key as string | undefined} error={errors.key} hint="e.g. renewal_date" />
        <Field form="field" name="label" label="Label (optional)" value={values.label as string | undefined} error={errors.label} />
        <p class={errors.format ? 'field invalid' : 'field'}>
          <label for="field-format">Format</label>
          <select id="field-format" name="format">
            {definableFormats().map((format) => (
              <option value={format} selected={values.format === format}>
                {format}
              </option>
            ))}
          </select>
          {errors.format ? <strong class="error">{errors.format}</strong> : null}
        </p>
        <Field form="field" name="options" label="Options (oneOf only, comma separated)" value={values.options as string | undefined} error={errors.options} />
        <Field form="field" name="linkTo" label="Links to object (link and linkList only)" value={values.linkTo as string | undefined} error={errors.linkTo} />
        <Field form="field" name="prefix" label="Prefix (autoNumber only)" value={values.prefix as string | undefined} error={errors.prefix} />
        <p>
          <label>
            <input type="checkbox" name="required" value="yes" checked={values.required === 'yes'} /> Required
          </label>{' '}
          <label>
            <input type="checkbox" name="personal" value="yes" checked={values.personal === 'yes'} /> Personal data
          </label>
        </p>
        <button type="submit">Add field</button>
      </form>
    </Page>,
    status as ContentfulStatusCode,
  );
}

const OBJECT_FIELDS = { name: /name/, key: /key|object/ };
const FIELD_FIELDS = { options: /options/, linkTo: /link/, prefix: /prefix/, format: /format/, label: /label/, key: /key|field/ };

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

  app.get('/objects/:object', (c) => renderFields(c, c.req.param('object')));
  app.post('/objects/:object/fields', async (c) => {
    const object = c.req.param('object');
    const names = ['key', 'label', 'format', 'options', 'linkTo', 'prefix', 'required', 'personal'] as const;
    const values = Object.fromEntries(names.map((name) => [name, formText(c, name).trim()])) as Record<(typeof names)[number], string>;
    try {
      await c.get('services').objects.addField(c.get('signedIn').workspace.slug, object, values.key, {
        format: values.format,
        required: values.required === 'yes',
        personal: values.personal === 'yes',
        ...(values.label ? { label: values.label } : {}),
        ...(values.options ? { options: values.options.split(',').map((option) => option.trim()).filter(Boolean) } : {}),
        ...(values.linkTo ? { linkTo: values.linkTo } : {}),
        ...(values.prefix ? { prefix: values.prefix } : {}),
      });
      return c.redirect(`/setup/objects/${object}`, 303);
    } catch (error) {
      return renderFields(c, object, { values, errors: refusedInput(error, FIELD_FIELDS, 'key') }, errorStatus);
    }
  });

  for (const [action, active] of [['deactivate', false], ['reactivate', true]] as const) {
    app.post(`/objects/:object/fields/:key/${action}`, async (c) => {
      const object = c.req.param('object');
      try {
        await c.get('services').objects.setActive(c.get('signedIn').workspace.slug, object, c.req.param('key'), active);
      } catch (error) {
        return renderFields(c, object, undefined, errorStatus, refusedInput(error, {}, 'field').field);
      }
      return c.redirect(`/setup/objects/${object}`, 303);
    });
  }
}

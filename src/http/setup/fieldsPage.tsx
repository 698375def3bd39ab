import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { definableFormats } from '../../schema/schemaDecider.js';
import type { SetupEnv } from './deps.js';
import { errorStatus, formText, refusedInput, type FormState } from './forms.js';
import { Csrf, Field, Page } from './layout.js';
import { Table } from './table.js';

/** One object's fields in the Object Manager: add one, deactivate or reactivate one (as `csr fields`). */

const yes = (flag: boolean) => (flag ? 'yes' : 'no');

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
      <Table columns={['Field', 'Key', 'Format and options', 'Required', 'Personal', 'Active', 'Actions']}>
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
      </Table>
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

const FIELD_FIELDS = { options: /options/, linkTo: /link/, prefix: /prefix/, format: /format/, label: /label/, key: /key|field/ };

export function fieldRoutes(app: Hono<SetupEnv>): void {
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

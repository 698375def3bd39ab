import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { allOrList, errorStatus, formList, formText, ownKey, refusedInput } from './forms.js';
import { KeysSection, RevokeConfirm, type KeysView } from './keys.js';
import { Page } from './layout.js';
import { WebhooksSection, type WebhooksView } from './webhooks.js';

/** "API & Webhooks": keys and webhooks on one page; each change a POST through the csr use cases. */

type Extras = Partial<Pick<KeysView, 'create' | 'created' | 'rename'>> & { webhookCreate?: WebhooksView['create']; webhookCreated?: WebhooksView['created'] };

const DONE: Record<string, string> = { 'key-revoked': 'The key is revoked: it stops working on the next request.' };

export async function renderApiPage(c: Context<SetupEnv>, extras: Extras = {}, status = 200) {
  const { signedIn, services } = { signedIn: c.get('signedIn'), services: c.get('services') };
  const slug = signedIn.workspace.slug;
  const [keys, webhooks, objects] = await Promise.all([services.setup.listKeys(slug), services.webhooks.list(slug), services.objects.listObjects(slug)]);
  const objectKeys = objects.map((object) => object.key);
  return c.html(
    <Page title="API & Webhooks" section="/setup/api" signedIn={signedIn} notice={DONE[c.req.query('done') ?? '']}>
      <KeysSection keys={keys} objects={objectKeys} csrfToken={signedIn.csrfToken} create={extras.create} created={extras.created} rename={extras.rename} />
      <WebhooksSection webhooks={webhooks} objects={objectKeys} csrfToken={signedIn.csrfToken} create={extras.webhookCreate} created={extras.webhookCreated} />
    </Page>,
    status as ContentfulStatusCode,
  );
}

const KEY_FIELDS = { objects: /object/, name: /name/ };
export const WEBHOOK_FIELDS = { url: /url/, events: /events/, objects: /object/, name: /name/ };

export function apiRoutes(app: Hono<SetupEnv>, deps: SetupPageDeps): void {
  app.get('/', (c) => c.redirect('/setup/api', 303));
  app.get('/api', (c) => renderApiPage(c));

  app.post('/keys', async (c) => {
    const values = { name: formText(c, 'name'), readOnly: formText(c, 'readOnly'), objects: formList(c, 'objects') };
    try {
      const { apiKey, key } = await c.get('services').setup.createKey(c.get('signedIn').workspace.slug, {
        name: values.name,
        readOnly: values.readOnly === 'yes',
        objects: allOrList(values.objects),
      });
      return renderApiPage(c, { created: { name: apiKey.name, key } });
    } catch (error) {
      return renderApiPage(c, { create: { values, errors: refusedInput(error, KEY_FIELDS, 'name') } }, errorStatus);
    }
  });

  app.post('/keys/:id/rename', async (c) => {
    const key = await ownKey(c, deps, c.req.param('id'));
    const name = formText(c, 'name');
    try {
      await c.get('services').setup.renameKey(key.id, name);
      return c.redirect('/setup/api', 303);
    } catch (error) {
      return renderApiPage(c, { rename: { id: key.id, state: { values: { name }, errors: refusedInput(error, {}, 'name') } } }, errorStatus);
    }
  });

  app.get('/keys/:id/revoke', async (c) => {
    const apiKey = await ownKey(c, deps, c.req.param('id'));
    const signedIn = c.get('signedIn');
    return c.html(
      <Page title="Revoke an API key" section="/setup/api" signedIn={signedIn}>
        <RevokeConfirm apiKey={apiKey} csrfToken={signedIn.csrfToken} />
      </Page>,
    );
  });

  app.post('/keys/:id/revoke', async (c) => {
    const key = await ownKey(c, deps, c.req.param('id'));
    await c.get('services').setup.revokeKey(key.id);
    return c.redirect('/setup/api?done=key-revoked', 303);
  });

  app.post('/webhooks', async (c) => {
    const values = { name: formText(c, 'name'), url: formText(c, 'url'), events: formList(c, 'events'), objects: formList(c, 'objects') };
    try {
      const created = await c.get('services').webhooks.create(c.get('signedIn').workspace.slug, {
        name: values.name,
        url: values.url,
        events: allOrList(values.events),
        objects: allOrList(values.objects),
      });
      return renderApiPage(c, { webhookCreated: created });
    } catch (error) {
      return renderApiPage(c, { webhookCreate: { values, errors: refusedInput(error, WEBHOOK_FIELDS, 'name') } }, errorStatus);
    }
  });
}

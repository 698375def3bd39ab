import { Hono } from 'hono';
import { describeError } from '../errors.js';
import { apiRoutes } from './apiRoutes.js';
import { assetRoutes } from './assets.js';
import { deliveryRoutes } from './deliveryPage.js';
import type { SetupEnv, SetupPageDeps } from './deps.js';
import { refusal } from './errorPage.js';
import { csrfChecked, formLimit, securityHeaders, signedInOnly } from './guard.js';
import { fieldRoutes } from './fieldsPage.js';
import { objectRoutes } from './objectsPage.js';
import { projectionRoutes } from './projectionsPage.js';
import { signInRoutes } from './signInRoutes.js';
import { webhookRoutes } from './webhookPage.js';

/**
 * The Setup page (issue 30, docs/setup.md), mounted at /setup: server-rendered HTML and plain
 * forms over the same use cases as `csr`. Sign-in and assets come first; everything after them
 * needs a session, and every POST its CSRF token.
 */
export function setupPage(deps: SetupPageDeps): Hono<SetupEnv> {
  const page = new Hono<SetupEnv>();
  page.use('*', securityHeaders);
  assetRoutes(page);
  signInRoutes(page, deps);
  page.post('*', formLimit);
  page.use('*', signedInOnly(deps), csrfChecked);
  apiRoutes(page, deps);
  webhookRoutes(page, deps);
  deliveryRoutes(page, deps);
  objectRoutes(page);
  fieldRoutes(page);
  projectionRoutes(page, deps);
  page.notFound((c) => refusal(c, 404, 'Not found', `There is no Setup page at ${c.req.path}.`));
  page.onError((error, c) => {
    const { status, message } = describeError(error, c, deps.logger);
    return refusal(c, status, status === 500 ? 'Something went wrong' : 'Not done', message);
  });
  return page;
}

import type { Logger } from 'pino';
import { REACTORS } from '../../../projections/reactors.js';
import { registeredProjections } from '../../../projections/registry.js';
import { projectionStatus } from '../../../projections/status.js';
import type { EventStore } from '../../eventstore/port.js';
import type { ReadStore } from '../../readstore/port.js';
import type { Catalogues } from '../../setup/catalogues.js';
import { ObjectManager } from '../../setup/objects.js';
import type { SetupStore } from '../../setup/port.js';
import type { SessionStore } from '../../setup/sessionPort.js';
import { SetupService } from '../../setup/service.js';
import { SignIn } from '../../setup/signIn.js';
import { WebhookSetup } from '../../webhooks/admin.js';
import type { WebhookSender } from '../../webhooks/httpsSender.js';
import type { WebhookStore } from '../../webhooks/port.js';
import type { SetupPageDeps } from './deps.js';

/** The Setup page's dependencies from the server's stores: the csr use cases, per signed-in person. */
export interface SetupPageStores {
  events: EventStore;
  readStore: ReadStore;
  setup: SetupStore;
  webhooks: WebhookStore;
  sessions: SessionStore;
}

export function composeSetupPage(
  stores: SetupPageStores,
  options: { sender: WebhookSender; retryDelaysMs: readonly number[]; allowPrivateTargets: boolean; catalogues: Catalogues; logger: Logger; clock: () => Date },
): SetupPageDeps {
  const { events, setup, webhooks } = stores;
  const { clock } = options;
  const listed = [...registeredProjections({ catalogues: options.catalogues }), ...REACTORS];
  return {
    signIn: new SignIn({ setup, sessions: stores.sessions, clock }),
    setup,
    webhooks,
    logger: options.logger,
    servicesFor: (actor) => ({
      setup: new SetupService({ setup, events, actor, clock }),
      objects: new ObjectManager({ setup, events, actor }),
      webhooks: new WebhookSetup({ setup, webhooks, events, actor, clock, sender: options.sender, retryDelaysMs: options.retryDelaysMs, allowPrivateTargets: options.allowPrivateTargets }),
    }),
    projectionStatus: async () => (await projectionStatus(stores, listed)).projections,
  };
}

import type { Logger } from 'pino';
import type { Actor } from '../../eventstore/port.js';
import type { ObjectManager } from '../../setup/objects.js';
import type { SetupStore } from '../../setup/port.js';
import type { SetupService } from '../../setup/service.js';
import type { SignedIn, SignIn } from '../../setup/signIn.js';
import type { WebhookSetup } from '../../webhooks/admin.js';
import type { WebhookStore } from '../../webhooks/port.js';
import type { RequestLog } from '../requestLog.js';

/** What the Setup page is given (composed in src/service.ts): the same use cases as `csr`. */
export interface SetupPageDeps {
  signIn: SignIn;
  /** Reads that tell whether a key, webhook or delivery belongs to the signed-in workspace. */
  setup: SetupStore;
  webhooks: WebhookStore;
  /** The use cases, acting as the signed-in person (audit: that person, via app). */
  servicesFor(actor: Actor): SetupServices;
  /** The projections' status rows (as `csr projections status`); absent: the section says so. */
  projectionStatus?: () => Promise<ProjectionRow[]>;
  logger: Logger;
}

export interface SetupServices {
  setup: SetupService;
  webhooks: WebhookSetup;
  objects: ObjectManager;
}

export interface ProjectionRow {
  name: string;
  kind: string;
  /** Null for the webhook fan-out, which has no version. */
  version: number | null;
  generation: number | null;
  state: string;
  lagEvents: number;
  lagMs: number;
  eventsPerSecond: number;
  lastError: string | null;
  lastErrorAt: string | null;
}

export type SetupEnv = {
  Variables: { requestId: string; log: RequestLog; signedIn: SignedIn; services: SetupServices; form: Record<string, string | string[]> };
};

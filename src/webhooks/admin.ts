import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import * as v from 'valibot';
import { NotFound, ValidationFailed } from '../core/errors.js';
import type { Actor, EventStore } from '../eventstore/port.js';
import { loadCatalogue } from '../setup/catalogues.js';
import { appendAuditEvent, type SetupEventType } from '../setup/audit.js';
import { workspaceStream } from '../events/workspace.js';
import { resendDelivery } from './resend.js';
import { recoverWebhook, type RecoverDeps, type RecoverSummary } from './recover.js';
import { sendClaimed, sendNowLease, type SendNowDeps } from './sendNow.js';
import { checkObjectKeys, ObjectsInput, parse, text } from '../setup/input.js';
import type { SetupStore } from '../setup/port.js';
import { checkWebhookUrl, resolveTarget } from './addressPolicy.js';
import { checkForwardTo } from './loopbackSender.js';
import { notListener } from './listen.js';
import type { WebhookSender } from './httpsSender.js';
import { EVENT_KINDS, WEBHOOKS_FILTER, WEBHOOKS_GROUP, type Delivery, type EventKind, type Webhook, type WebhookStore } from './port.js';
import { ADMIN_SWITCH_OFF_REASON, switchedOffAt } from './timeline.js';

/**
 * Webhook configuration (spec 6.1, PRODUCT.md section 2): the use cases behind `csr webhooks`.
 * Every change is also an audit event on `workspace-<id>` (never with the secret).
 */

/** Setup shows this many deliveries per webhook (spec 6.4). */
export const DELIVERIES_SHOWN = 50;

export interface WebhookSetupOptions {
  setup: SetupStore;
  webhooks: WebhookStore;
  events: EventStore;
  sender: WebhookSender;
  actor: Actor;
  retryDelaysMs: readonly number[];
  allowPrivateTargets: boolean;
  clock?: () => Date;
  /** What `recover` renders records with (csr); without it, recover is refused. */
  recovery?: Pick<RecoverDeps, 'readStore' | 'catalogues' | 'logger'>;
  /** Name resolution for the address check at save (tests); the system resolver by default. */
  lookup?: (hostname: string) => Promise<string[]>;
}

export interface NewWebhookInput {
  name: string;
  url: string;
  events?: 'all' | string[];
  objects?: 'all' | string[];
}

const WebhookInput = v.object({
  name: text('the webhook name', 200),
  url: text('the webhook url', 2048),
  events: v.optional(
    v.union(
      [
        v.literal('all'),
        v.pipe(
          v.array(v.picklist(EVENT_KINDS, `events must be "all" or a list of ${EVENT_KINDS.join(', ')}`)),
          v.nonEmpty('events must name at least one kind (or be "all")'),
        ),
      ],
      `events must be "all" or a list of ${EVENT_KINDS.join(', ')}`,
    ),
    'all',
  ),
  objects: ObjectsInput,
});

function parseTime(option: string, text: string): Date {
  const time = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(time.getTime())) throw new ValidationFailed(`${option} must be a time such as 2026-01-31T09:00:00Z (got "${text}")`);
  return time;
}

function definedOnly<T extends object>(input: T): Partial<T> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** 32 random bytes; the prefix tells a leaked value for what it is. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export class WebhookSetup {
  private readonly clock: () => Date;

  constructor(private readonly options: WebhookSetupOptions) {
    this.clock = options.clock ?? (() => new Date());
  }

  /** The secret is returned this once. */
  async create(workspaceSlug: string, input: NewWebhookInput): Promise<{ webhook: Webhook; secret: string }> {
    return this.register(workspaceSlug, input, (url) => this.checkAddress(url), false);
  }

  /**
   * A `csr webhooks listen` session's temporary webhook: its deliveries go to a local address and
   * are sent by that session only (webhooks/listen.ts). The address rule of ordinary webhooks
   * is not relaxed: this webhook is marked, and no dispatcher ever sends a marked webhook's deliveries.
   */
  async createListener(workspaceSlug: string, input: { forwardTo: string; events?: 'all' | string[]; objects?: 'all' | string[] }): Promise<{ webhook: Webhook; secret: string }> {
    const forwardTo = checkForwardTo(input.forwardTo);
    if (!forwardTo.ok) throw new ValidationFailed(`--forward-to is refused: ${forwardTo.reason}`);
    const name = `csr webhooks listen on ${hostname()} (pid ${process.pid})`;
    return this.register(workspaceSlug, { ...input, name, url: forwardTo.url.href }, async (url) => url, true);
  }

  private async register(workspaceSlug: string, input: NewWebhookInput, checkAddress: (url: string) => Promise<string>, listener: boolean): Promise<{ webhook: Webhook; secret: string }> {
    const workspace = await this.options.setup.workspaceBySlug(workspaceSlug);
    if (!workspace) throw new NotFound(`workspace "${workspaceSlug}" not found`);
    const valid = parse(WebhookInput, input);
    const url = await checkAddress(valid.url);
    const events: Webhook['events'] = valid.events === 'all' ? 'all' : [...new Set(valid.events as EventKind[])];
    const objects = valid.objects === 'all' ? 'all' : checkObjectKeys((await loadCatalogue(this.options.events, workspace.id)).objects.map((object) => object.key), valid.objects);
    const webhook: Webhook = {
      id: randomUUID(),
      workspaceId: workspace.id,
      name: valid.name,
      url,
      events,
      objects,
      enabled: true,
      disabledReason: null,
      secret: newSecret(),
      createdAt: this.clock().toISOString(),
      consecutiveFailures: 0,
      lastSuccessAt: null,
      ...(listener ? { listener: true as const } : {}),
    };
    // The fan-out's group starts where it is created: it must exist before a webhook can want a
    // change, whether or not a dispatcher has run yet.
    await this.options.events.ensurePersistentGroup(WEBHOOKS_GROUP, { filter: WEBHOOKS_FILTER });
    // The log first: the fan-out decides who receives a change by log order (webhooks/timeline.ts).
    await this.audit(webhook, 'WebhookCreated', { name: webhook.name, url, events, objects, ...(listener ? { listener: true } : {}) });
    await this.options.webhooks.createWebhook(webhook);
    return { webhook, secret: webhook.secret };
  }

  /**
   * A new name, URL, events and objects, checked as at creation (the address rule too). New
   * filters apply to changes made after the edit, by the log like everything the fan-out decides.
   */
  async update(id: string, input: Partial<NewWebhookInput>): Promise<Webhook> {
    const current = notListener(await this.webhook(id));
    const valid = parse(WebhookInput, { name: current.name, url: current.url, events: current.events, objects: current.objects, ...definedOnly(input) });
    const url = await this.checkAddress(valid.url);
    const events: Webhook['events'] = valid.events === 'all' ? 'all' : [...new Set(valid.events as EventKind[])];
    const objects = valid.objects === 'all' ? 'all' : checkObjectKeys((await loadCatalogue(this.options.events, current.workspaceId)).objects.map((object) => object.key), valid.objects);
    await this.audit(current, 'WebhookChanged', { name: valid.name, url, events, objects });
    const changed = await this.options.webhooks.updateWebhook(id, { name: valid.name, url, events, objects });
    if (!changed) throw new NotFound(`webhook ${id} not found`);
    return changed;
  }

  /** With `disabledAt`, when an off webhook was switched off (by an admin or automatically), from the log. */
  async list(workspaceSlug: string): Promise<(Webhook & { disabledAt: string | null })[]> {
    const workspace = await this.options.setup.workspaceBySlug(workspaceSlug);
    if (!workspace) throw new NotFound(`workspace "${workspaceSlug}" not found`);
    const [webhooks, logged] = await Promise.all([this.options.webhooks.listWebhooks(workspace.id), this.options.events.readStream(workspaceStream(workspace.id))]);
    const offAt = switchedOffAt(logged);
    return webhooks.map((webhook) => ({ ...webhook, disabledAt: webhook.enabled ? null : (offAt.get(webhook.id) ?? null) }));
  }

  /** Off: waiting deliveries become skipped and changes are no longer queued. */
  async switch(id: string, on: boolean): Promise<Webhook> {
    const current = await this.webhook(id);
    if (current.enabled === on) return current;
    if (on) await this.checkAddress(current.url);
    // The log first: from its position on, the fan-out sends (or never sends) by it, whatever
    // happens next; a crash before the store follows is finished by the fan-out (logView.ts).
    await this.audit(current, on ? 'WebhookSwitchedOn' : 'WebhookSwitchedOff', {});
    const changed = await this.options.webhooks.setEnabled(id, on, on ? null : ADMIN_SWITCH_OFF_REASON);
    if (!changed) throw new NotFound(`webhook ${id} not found`);
    return changed;
  }

  /** Deletes a webhook and its deliveries; by the log, nothing after the deletion goes to it. */
  async delete(id: string): Promise<{ id: string; deleted: true }> {
    const current = await this.webhook(id);
    await this.audit(current, 'WebhookDeleted', { name: current.name });
    if (!(await this.options.webhooks.deleteWebhook(id))) throw new NotFound(`webhook ${id} not found`);
    return { id, deleted: true };
  }

  /**
   * The old secret signs nothing from now on (spec 6.1); the new one is returned this once. A
   * delivery is signed with the secret current when it is sent, retries of older changes too.
   */
  async rotateSecret(id: string): Promise<{ id: string; secret: string }> {
    const secret = newSecret();
    const webhook = await this.options.webhooks.setSecret(id, secret);
    if (!webhook) throw new NotFound(`webhook ${id} not found`);
    await this.audit(webhook, 'WebhookSecretRotated', {});
    return { id, secret };
  }

  /**
   * Sends `webhook.test` now and returns its delivery as it stands after the attempt; a failed
   * test is retried on the schedule like any delivery. occurredAt is the commit time of the
   * test's audit event, so it comes from the log like every other occurredAt.
   */
  async test(id: string): Promise<Delivery> {
    const webhook = notListener(await this.webhook(id));
    const eventId = await this.audit(webhook, 'WebhookTestSent', {});
    const logged = (await this.options.events.readStream(workspaceStream(webhook.workspaceId), { direction: 'backwards', maxCount: 20 })).find(
      (event) => event.id === eventId,
    );
    const payload = {
      id: eventId,
      workspaceId: webhook.workspaceId,
      event: 'webhook.test',
      object: null,
      source: 'app',
      occurredAt: (logged?.created ?? this.clock()).toISOString(),
      data: { webhook: { id: webhook.id, name: webhook.name } },
    };
    const { at, claimedUntil } = sendNowLease(this.clock);
    const [delivery] = await this.options.webhooks.enqueue([{ payload, webhookIds: [webhook.id] }], at, { claimedUntil });
    const [sent] = await sendClaimed(this.sendNow(), webhook, [{ delivery: delivery!, payload }]);
    return sent!;
  }

  /** A new attempt of one delivery, with cause 'resend' (webhookResend.ts). */
  async resend(deliveryId: string): Promise<Delivery> {
    return resendDelivery(this.sendNow(), deliveryId);
  }

  /**
   * Sends again, in log order, the record events of [since, until) the webhook's filters match,
   * also those made while it was off (webhooks/recover.ts states the rule). `until` defaults to now.
   */
  async recover(id: string, window: { since: string; until?: string; failedOnly: boolean }, progress?: (summary: RecoverSummary) => void, signal?: AbortSignal): Promise<RecoverSummary> {
    const since = parseTime('--since', window.since);
    const until = window.until === undefined ? this.clock() : parseTime('--until', window.until);
    if (since.getTime() >= until.getTime()) throw new ValidationFailed('the window runs the wrong way: --since must be before --until');
    const webhook = notListener(await this.webhook(id));
    if (!this.options.recovery) throw new Error('recover needs the records read model');
    const deps = { ...this.sendNow(), ...this.options.recovery, events: this.options.events, listUsers: (workspaceId: string) => this.options.setup.listUsers(workspaceId) };
    return recoverWebhook(deps, webhook, { since, until, failedOnly: window.failedOnly }, progress, signal);
  }

  private sendNow(): SendNowDeps {
    return { webhooks: this.options.webhooks, sender: this.options.sender, retryDelaysMs: this.options.retryDelaysMs, clock: this.clock };
  }

  /**
   * Hands the webhook events parked after repeated fan-out failures to the dispatchers again
   * (an operator's command, once the cause is fixed); returns how many there were.
   */
  async replayParked(): Promise<{ replayed: number }> {
    return { replayed: await this.options.events.replayParked(WEBHOOKS_GROUP) };
  }

  async deliveries(id: string): Promise<Delivery[]> {
    await this.webhook(id);
    return this.options.webhooks.deliveries(id, DELIVERIES_SHOWN);
  }

  private async webhook(id: string): Promise<Webhook> {
    const webhook = await this.options.webhooks.webhookById(id);
    if (!webhook) throw new NotFound(`webhook ${id} not found`);
    return webhook;
  }

  /** The address rule at save time (spec 6.1); it is applied again before every send. */
  private async checkAddress(url: string): Promise<string> {
    const checked = checkWebhookUrl(url);
    if (!checked.ok) throw new ValidationFailed(`the webhook url is refused: ${checked.reason}`);
    const target = await resolveTarget(checked.url, {
      allowPrivate: this.options.allowPrivateTargets,
      ...(this.options.lookup ? { lookup: this.options.lookup } : {}),
    });
    if (!target.ok) throw new ValidationFailed(`the webhook url is refused: ${target.reason}`);
    return checked.url.href;
  }

  private audit(webhook: Webhook, type: SetupEventType, data: Record<string, unknown>): Promise<string> {
    return appendAuditEvent(this.options.events, this.options.actor, webhook.workspaceId, type, { webhookId: webhook.id, ...data });
  }
}

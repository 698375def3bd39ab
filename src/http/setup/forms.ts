import type { Context } from 'hono';
import { NotFound, ValidationFailed } from '../../core/errors.js';
import type { SetupEnv, SetupPageDeps } from './deps.js';

/** Reading the posted form, and placing a refused value's message next to its field. */

export type FormErrors = Record<string, string>;

export interface FormState {
  values: Record<string, string | string[]>;
  errors: FormErrors;
}

export function formText(c: Context<SetupEnv>, name: string): string {
  const value = c.get('form')[name];
  return typeof value === 'string' ? value : Array.isArray(value) ? (value[0] ?? '') : '';
}

export function formList(c: Context<SetupEnv>, name: string): string[] {
  const value = c.get('form')[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** Ticked boxes, or 'all' when none is ticked. */
export function allOrList(list: string[]): 'all' | string[] {
  return list.length === 0 ? 'all' : list;
}

/**
 * The use cases' messages name their field ("the webhook url is refused: ..."): the first field
 * whose pattern matches gets the message, else `fallback`. Anything but refused input is rethrown.
 */
export function refusedInput(error: unknown, fields: Record<string, RegExp>, fallback: string): FormErrors {
  if (!(error instanceof ValidationFailed)) throw error;
  const field = Object.keys(fields).find((name) => fields[name]!.test(error.message)) ?? fallback;
  return { [field]: error.message };
}

/** What a refused form answers with (ValidationFailed's status). */
export const errorStatus = 422;

/** A key of the signed-in workspace; another workspace's key is as unknown as a missing one. */
export async function ownKey(c: Context<SetupEnv>, deps: SetupPageDeps, id: string) {
  const key = await deps.setup.keyById(id);
  if (!key || key.workspaceId !== c.get('signedIn').workspace.id) throw new NotFound(`API key ${id} not found`);
  return key;
}

export async function ownWebhook(c: Context<SetupEnv>, deps: SetupPageDeps, id: string) {
  const webhook = await deps.webhooks.webhookById(id);
  if (!webhook || webhook.workspaceId !== c.get('signedIn').workspace.id) throw new NotFound(`webhook ${id} not found`);
  return webhook;
}

export async function ownDelivery(c: Context<SetupEnv>, deps: SetupPageDeps, id: string) {
  const delivery = /^[1-9][0-9]{0,15}$/.test(id) ? await deps.webhooks.deliveryById(Number(id)) : null;
  if (delivery) {
    const webhook = await deps.webhooks.webhookById(delivery.webhookId);
    if (webhook && webhook.workspaceId === c.get('signedIn').workspace.id) return { delivery, webhook };
  }
  throw new NotFound(`delivery ${id} not found`);
}

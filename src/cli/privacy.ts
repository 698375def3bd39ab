import { contactsWithEmail, exportPerson, findPerson, type PeopleContext } from '../../queries/people.js';
import { todayUtc } from '../schema/dates.js';
import { isEmbedded } from '../backends.js';
import { NotFound } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { eraseContacts, type ErasureResult } from '../privacy/erase.js';
import { erasureLedger, reapplyErasures, type LedgerEntry, type Reapplied } from '../privacy/ledger.js';
import type { PrivateEventStore } from '../privacy/privateEvents.js';
import { runningServers } from '../runtime/serverPids.js';
import { loadCatalogue } from '../setup/catalogues.js';
import { cliActor } from '../setup/service.js';
import { waitFannedOut } from '../webhooks/fannedOut.js';
import { stringOption, UsageError, type CliContext, type CliResource, type OptionValues } from './context.js';

/**
 * `csr privacy find|export|erase|erasures` (docs/privacy.md): a person's data found, exported,
 * erased everywhere (crypto-shredding), and the ledger of erasures that a restore re-applies.
 */

async function people(context: CliContext, values: OptionValues): Promise<PeopleContext> {
  const workspaceId = await context.workspaceId(stringOption(values, 'workspace')!);
  const { events, readStore, setup } = context.backends;
  return { workspaceId, events, readStore, catalogue: await loadCatalogue(events, workspaceId), listUsers: (id) => setup.listUsers(id), canAccess: () => true, today: todayUtc(new Date()) };
}

function contactOption(values: OptionValues): string | undefined {
  const id = stringOption(values, 'contact');
  if (id !== undefined && (!isUuid(id) || id !== id.toLowerCase())) throw new NotFound(`contact ${id} not found in this workspace`);
  return id;
}

function oneOf(values: OptionValues): { email?: string; contact?: string } {
  const contact = contactOption(values);
  const email = stringOption(values, 'email');
  if ((contact === undefined) === (email === undefined)) throw new UsageError('give either --contact <id> or --email <address>');
  return contact !== undefined ? { contact } : { email: email! };
}

/** Erases again what a ledger lists, in the store as it is now (`csr restore --reapply-erasures`). */
export async function reapplyLedger(context: CliContext, entries: LedgerEntry[]): Promise<Reapplied> {
  const events = context.backends.events as PrivateEventStore;
  const result = await reapplyErasures(events, entries, cliActor());
  if (result.position) await context.records().commands.waitVisible(result.position);
  const byWorkspace = new Map<string, Reapplied['erased']>();
  for (const record of result.erased) byWorkspace.set(record.workspaceId, [...(byWorkspace.get(record.workspaceId) ?? []), record]);
  for (const [workspaceId, records] of byWorkspace) {
    await context.backends.webhooks.redactPayloads(workspaceId, records.map((record) => record.id), [...new Set(records.flatMap((record) => record.fields))]);
  }
  await context.backends.scrub();
  return result;
}

function erasureText(result: ErasureResult): string {
  if (result.erased.length === 0) return `nothing to erase: already erased (${result.alreadyErased.length} record(s))\n`;
  const behind = result.webhooksBehind
    ? `warning: the webhook fan-out had not passed the erasure within ${FAN_OUT_WAIT_MS / 1000} s (see \`csr projections status\`); deliveries it had built before may keep the old values\n`
    : '';
  return `erased ${result.erased.length} record(s) at ${result.erasedAt}:\n${result.erased.map((record) => `  ${record.object} ${record.id}: ${record.fields.join(', ')}`).join('\n')}\n${behind}`;
}

/** How long an erasure waits for the webhook fan-out to store what it was building. */
const FAN_OUT_WAIT_MS = 30_000;

/**
 * Whether a webhook fan-out may be running: a server on this DATA_DIR, or, on the production
 * backends, servers elsewhere (the group's checkpoint is then waited for, within FAN_OUT_WAIT_MS).
 */
function fanOutMayRun(context: CliContext): () => boolean {
  if (!isEmbedded(context.config)) return () => true;
  return () => runningServers(context.config.dataDir).length > 0;
}

export const privacy: CliResource = {
  name: 'privacy',
  description: "a person's data: find it, export it, erase it everywhere; the erasure ledger",
  commands: {
    find: {
      usage: '--workspace <slug> (--email <address> | --contact <id>)',
      description: 'list every record holding the person\'s data (the contact, records linking it, personal fields holding the email)',
      options: { workspace: { type: 'string' }, email: { type: 'string' }, contact: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, context) {
        return findPerson(await people(context, values), oneOf(values));
      },
    },
    export: {
      usage: '--workspace <slug> --contact <id>',
      description: 'print everything held about the person as JSON: each record and its history',
      options: { workspace: { type: 'string' }, contact: { type: 'string' } },
      required: ['workspace', 'contact'],
      async run({ values }, context) {
        return exportPerson(await people(context, values), contactOption(values)!);
      },
      text: (result: unknown) => `${JSON.stringify(result, null, 2)}\n`,
    },
    erase: {
      usage: '--workspace <slug> (--contact <id> | --email <address>) [--reason <text>] [--rewrite-legacy]',
      description: "erase the person's data everywhere: deletes the data keys of the contact and of every record that links or linked it",
      options: { workspace: { type: 'string' }, email: { type: 'string' }, contact: { type: 'string' }, reason: { type: 'string' }, 'rewrite-legacy': { type: 'boolean' } },
      required: ['workspace'],
      async run({ values }, context) {
        const ctx = await people(context, values);
        const which = oneOf(values);
        const contactIds = which.contact ? [which.contact] : await contactsWithEmail(ctx, which.email!);
        if (contactIds.length === 0) throw new NotFound(`no contact with the email ${which.email} in this workspace`);
        const alsoRecords = (await findPerson(ctx, which)).filter((record) => record.why.startsWith('field '));
        return eraseContacts(
          {
            events: context.backends.events as PrivateEventStore,
            catalogue: ctx.catalogue,
            webhooks: context.backends.webhooks,
            waitVisible: (position) => context.records().commands.waitVisible(position),
            fannedOut: (position) => waitFannedOut(context.backends.events, position, { running: fanOutMayRun(context), timeoutMs: FAN_OUT_WAIT_MS }),
            scrub: () => context.backends.scrub(),
          },
          { workspaceId: ctx.workspaceId, contactIds, reason: stringOption(values, 'reason') ?? null, actor: cliActor(), alsoRecords, rewriteLegacy: values['rewrite-legacy'] === true },
        );
      },
      text: erasureText as (result: never) => string,
    },
    erasures: {
      usage: '--workspace <slug>',
      description: 'print the erasure ledger (ids and times only) for `csr restore <file> --reapply-erasures <ledger>`',
      options: { workspace: { type: 'string' } },
      required: ['workspace'],
      async run({ values }, context) {
        return erasureLedger(context.backends.events, await context.workspaceId(stringOption(values, 'workspace')!));
      },
    },
  },
};

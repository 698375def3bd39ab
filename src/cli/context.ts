import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config.js';
import { createWebhookSender, embeddedFiles, isEmbedded, openBackends, type Backends } from '../backends.js';
import { NotFound } from '../core/errors.js';
import type { ReadStore } from '../readstore/port.js';
import { pino } from 'pino';
import { Catalogues } from '../setup/catalogues.js';
import { ObjectManager } from '../setup/objects.js';
import { cliActor, SetupService } from '../setup/service.js';
import { WebhookSetup } from '../webhooks/admin.js';
import { openRecordContext, type RecordContext } from './recordContext.js';

/**
 * What `csr` commands work with, and the shape of the command table: a resource (workspaces,
 * keys, users, webhooks...) is one file exporting a `CliResource`, registered in main.ts.
 */

export interface CliContext {
  /** What the stores were opened with (backups and restores work on its files). */
  config: Config;
  /** The stores themselves, for auditors' and operators' commands (history, audit, projections, backups). */
  backends: Backends;
  setup: SetupService;
  webhooks: WebhookSetup;
  /** The records read model (operator queries such as `records duplicates`). */
  readStore: ReadStore;
  /** The id of the workspace with this slug; NotFound when there is none. */
  workspaceId(slug: string): Promise<string>;
  objects: ObjectManager;
  /** The record writing tools (opened on first use: they run a projector while the command runs). */
  records(): RecordContext;
  close(): Promise<void>;
}

/**
 * The same backends as the server, chosen by the composition root (the server may be running).
 * `notice` tells the operator when there was no store yet and a new one was made, so that a
 * command run in the wrong folder does not quietly work on an empty store.
 */
export async function openCliContext(config: Config, notice: (text: string) => void = () => {}): Promise<CliContext> {
  const fresh = isEmbedded(config) && !existsSync(embeddedFiles(config.dataDir).events);
  const backends = await openBackends(config);
  if (fresh) notice(`no store in ${resolve(config.dataDir)} yet: created a new one there (DATA_DIR chooses another)`);
  const actor = cliActor();
  const sender = createWebhookSender(config);
  let records: RecordContext | null = null;
  return {
    config,
    backends,
    records: () => (records ??= openRecordContext(backends)),
    setup: new SetupService({ setup: backends.setup, events: backends.events, actor }),
    objects: new ObjectManager({ setup: backends.setup, events: backends.events, actor }),
    webhooks: new WebhookSetup({
      setup: backends.setup,
      webhooks: backends.webhooks,
      events: backends.events,
      sender,
      actor,
      retryDelaysMs: config.webhookRetryDelaysMs,
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      recovery: { readStore: backends.readStore, catalogues: new Catalogues(backends.events), logger: pino({ level: 'silent' }) },
    }),
    readStore: backends.readStore,
    async workspaceId(slug) {
      const workspace = await backends.setup.workspaceBySlug(slug);
      if (!workspace) throw new NotFound(`workspace "${slug}" not found`);
      return workspace.id;
    },
    async close() {
      await records?.stop();
      sender.close();
      await backends.close();
    },
  };
}

/** Wrong use of the tool (unknown command, missing argument): exit code 2 with the usage. */
export class UsageError extends Error {}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandArgs {
  positionals: string[];
  values: OptionValues;
  /** Where a command that `streams` writes its output, and its progress lines. */
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface CliCommand {
  /** Arguments as shown in the usage, e.g. `--workspace <slug> --name <text> [--read-only]`. */
  usage: string;
  description: string;
  /** Names of the positional arguments, all required, e.g. ['slug']. */
  positionals?: string[];
  /**
   * Runs without opening the stores (its context holds only `config`): for commands that copy or
   * replace the store files themselves (backup, restore).
   */
  withoutStores?: boolean;
  /** Names of positional arguments that may follow the required ones. */
  optionalPositionals?: string[];
  options?: NonNullable<ParseArgsConfig['options']>;
  /** Options that must be given. */
  required?: string[];
  /** The result, printed as JSON with --json. */
  run(args: CommandArgs, context: CliContext): Promise<unknown>;
  /** True when the result reports a failure (e.g. a test delivery that failed): exit code 1. */
  failed?(result: never): boolean;
  /** Text form of the result without --json (default: output.ts `formatText`). */
  text?(result: never): string;
  /** The command writes its own output to `stdout` (e.g. NDJSON); its result is not printed. */
  streams?: boolean;
}

export interface CliResource {
  name: string;
  description: string;
  commands: Record<string, CliCommand>;
  /** A resource that is itself the command (`csr history <object> <id>`): no command name follows. */
  direct?: CliCommand;
}

/** A string option's value; undefined when absent. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** `a,b , c` -> ['a', 'b', 'c']; `all` -> 'all'; undefined when the option is absent. */
export function listOption(values: OptionValues, name: string): 'all' | string[] | undefined {
  const value = stringOption(values, name);
  if (value === undefined) return undefined;
  if (value.trim() === 'all') return 'all';
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

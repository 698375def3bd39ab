import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openCliContext, UsageError, type CliCommand, type CliContext, type CliResource, type OptionValues } from './context.js';
import { audit } from './audit.js';
import { backup, restore } from './backups.js';
import { privacy } from './privacy.js';
import { fields } from './fields.js';
import { keys } from './keys.js';
import { numbers } from './numbers.js';
import { objects } from './objects.js';
import { openapi } from './openapi.js';
import { projections } from './projections.js';
import { formatJson, formatText } from './output.js';
import { imports } from './import.js';
import { automation, playbooks } from './playbooks.js';
import { get, history } from './history.js';
import { records } from './records.js';
import { setupPage } from './setupPage.js';
import { didYouMean } from './suggest.js';
import { users } from './users.js';
import { webhooks } from './webhooks.js';
import { workspaces } from './workspaces.js';

/**
 * `csr`: the Setup tool (PRODUCT.md section 2). `csr <resource> <command> [arguments] [--json]`.
 * A resource is one file exporting a CliResource; adding one is adding it to this table.
 * stdout carries the result only (one JSON document with --json); errors go to stderr with exit
 * code 2 for wrong usage and 1 for anything else, and then stdout stays empty.
 */

const RESOURCES: readonly CliResource[] = [workspaces, keys, users, webhooks, records, numbers, objects, fields, openapi, history, get, audit, projections, backup, restore, playbooks, automation, imports, setupPage, privacy];

const GLOBAL_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function commandLine(resource: CliResource, name: string, command: CliCommand): string {
  return `  csr ${[resource.name, name, command.usage].filter(Boolean).join(' ')}` + `\n      ${command.description}`;
}

function usage(only?: CliResource, commandName?: string): string {
  const lines: string[] = ['Usage: csr <resource> <command> [arguments] [--json]', '       csr help [<resource> [<command>]]   csr --version', ''];
  for (const resource of only ? [only] : RESOURCES) {
    lines.push(`${resource.name}: ${resource.description}`);
    if (resource.direct) lines.push(`  csr ${resource.name} ${resource.direct.usage}\n      ${resource.direct.description}`);
    for (const [name, command] of Object.entries(resource.commands)) {
      if (commandName === undefined || commandName === name) lines.push(commandLine(resource, name, command));
    }
    lines.push('');
  }
  lines.push(
    'Every command takes --json and then prints exactly one JSON document on stdout.',
    'Errors go to stderr in one line, with exit code 2 for wrong usage and 1 for anything else.',
    'The tool works on the stores in DATA_DIR (default ./data), also while the server runs.',
  );
  return `${lines.join('\n')}\n`;
}

/** A usage error: one line on stderr saying what to do, exit code 2. */
class ScopedUsageError extends UsageError {
  constructor(
    message: string,
    readonly resource?: CliResource,
    readonly command?: string,
  ) {
    super(message);
  }

  /** Where to read more: the narrowest help that fits. */
  get hint(): string {
    const topic = [this.resource?.name, this.command].filter(Boolean).join(' ');
    return topic ? `csr help ${topic}` : 'csr --help';
  }
}

interface Invocation {
  resource: CliResource;
  commandName: string;
  command: CliCommand;
  positionals: string[];
  values: OptionValues;
  json: boolean;
}

type Parsed = { kind: 'help'; text: string } | { kind: 'version' } | ({ kind: 'run' } & Invocation);

function findResource(name: string): CliResource {
  const resource = RESOURCES.find((candidate) => candidate.name === name);
  if (resource) return resource;
  const names = RESOURCES.map((candidate) => candidate.name);
  throw new ScopedUsageError(`unknown command "${name}".${didYouMean(name, names)} Commands: ${names.join(', ')}`);
}

function findCommand(resource: CliResource, name: string): CliCommand {
  if (Object.hasOwn(resource.commands, name)) return resource.commands[name]!;
  const names = Object.keys(resource.commands);
  throw new ScopedUsageError(
    `unknown command "${resource.name} ${name}".${didYouMean(name, names, `${resource.name} `)} ${resource.name} commands: ${names.join(', ')}`,
    resource,
  );
}

/** `csr help [resource [command]]`: the usage of what was named. */
function help(words: string[]): Parsed {
  const [resourceName, commandName] = words;
  if (resourceName === undefined) return { kind: 'help', text: usage() };
  const resource = findResource(resourceName);
  if (commandName !== undefined) findCommand(resource, commandName);
  return { kind: 'help', text: usage(resource, commandName) };
}

function parse(argv: string[]): Parsed {
  let json = false;
  let index = 0;
  for (; index < argv.length && argv[index]!.startsWith('-'); index++) {
    const flag = argv[index]!;
    if (flag === '--json') json = true;
    else if (flag === '--help' || flag === '-h') return help([]);
    else if (flag === '--version' || flag === '-v') return { kind: 'version' };
    else throw new ScopedUsageError(`unknown option ${flag}.${didYouMean(flag, ['--help', '--version', '--json'])} Options of a command come after it`);
  }
  const [resourceName, ...afterResource] = argv.slice(index);
  if (resourceName === undefined) return help([]);
  if (resourceName === 'help') return help(argv.slice(index + 1));
  const resource = findResource(resourceName);
  if (resource.direct) {
    const args = argv.slice(index + 1);
    if (args.includes('--help') || args.includes('-h')) return help([resource.name]);
    return parseCommand(resource, '', resource.direct, args, json);
  }
  const [commandName, ...rest] = afterResource;
  if (commandName === undefined || commandName === '--help' || commandName === '-h') return help([resource.name]);
  if (commandName.startsWith('-')) throw new ScopedUsageError(`missing ${resource.name} command before ${commandName}`, resource);
  const command = findCommand(resource, commandName);
  if (rest.includes('--help') || rest.includes('-h')) return help([resource.name, commandName]);
  return parseCommand(resource, commandName, command, rest, json);
}

/** The arguments of one command (`commandName` is '' for a resource that is itself the command). */
function parseCommand(resource: CliResource, commandName: string, command: CliCommand, rest: string[], json: boolean): Parsed {
  const invoked = `${resource.name}${commandName ? ` ${commandName}` : ''}`;
  const options = { ...command.options, ...GLOBAL_OPTIONS };
  let parsed: { values: OptionValues; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ScopedUsageError(optionError(error, Object.keys(options)), resource, commandName);
  }
  const { values, positionals } = parsed;
  const expected = command.positionals ?? [];
  if (positionals.length < expected.length) {
    throw new ScopedUsageError(`missing <${expected[positionals.length]!}>: csr ${invoked} ${command.usage}`, resource, commandName);
  }
  if (positionals.length > expected.length + (command.optionalPositionals ?? []).length) {
    throw new ScopedUsageError(`unexpected argument "${positionals[expected.length]!}": csr ${invoked} ${command.usage}`, resource, commandName);
  }
  for (const name of command.required ?? []) {
    if (values[name] === undefined) throw new ScopedUsageError(`missing option --${name}: csr ${invoked} ${command.usage}`, resource, commandName);
  }
  return { kind: 'run', resource, commandName, command, positionals, values, json: json || values.json === true };
}

/** node:util's parseArgs errors, in the tool's words and with a suggestion. */
function optionError(error: unknown, known: string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  const option = /'(-{1,2}[^'\s]+)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) {
    const suggestion = didYouMean(option.replace(/^-+/, ''), known, '--');
    return suggestion ? `unknown option ${option}.${suggestion}` : `unknown option ${option}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) return `option ${option} needs a value`;
  return message;
}

interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
}

async function run(argv: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    const scoped = error as ScopedUsageError;
    io.stderr(`csr: ${scoped.message} (see ${scoped.hint})\n`);
    return 2;
  }
  if (parsed.kind === 'help') {
    io.stdout(parsed.text);
    return 0;
  }
  if (parsed.kind === 'version') {
    io.stdout(`csr ${packageVersion()}\n`);
    return 0;
  }
  const invocation = parsed;
  try {
    const config = loadConfig(env);
    const context = invocation.command.withoutStores
      ? ({ config, close: async () => undefined } as unknown as CliContext)
      : await openCliContext(config, (notice) => io.stderr(`csr: ${notice}\n`));
    let result: unknown;
    try {
      result = await invocation.command.run(
        { positionals: invocation.positionals, values: invocation.values, stdout: process.stdout, stderr: process.stderr },
        context,
      );
    } finally {
      await context.close();
    }
    const { command, json } = invocation;
    if (!command.streams) io.stdout(json ? formatJson(result) : command.text ? command.text(result as never) : formatText(result));
    return command.failed?.(result as never) ? 1 : 0;
  } catch (error) {
    if (error instanceof UsageError) {
      // A command without subcommands (import, backup, ...) has an empty command name.
      const topic = [invocation.resource.name, invocation.commandName].filter(Boolean).join(' ');
      io.stderr(`csr: ${error.message} (see csr help ${topic})\n`);
      return 2;
    }
    io.stderr(`csr: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function packageVersion(): string {
  const file = new URL('../../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

process.exitCode = await run(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

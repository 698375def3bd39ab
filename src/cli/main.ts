import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openCliContext, UsageError, type CliCommand, type CliResource, type OptionValues } from './context.js';
import { keys } from './keys.js';
import { formatJson, formatText } from './output.js';
import { imports } from './import.js';
import { automation, playbooks } from './playbooks.js';
import { users } from './users.js';
import { webhooks } from './webhooks.js';
import { workspaces } from './workspaces.js';

/**
 * `csr`: the Setup tool (PRODUCT.md section 2). `csr <resource> <command> [arguments] [--json]`.
 * A resource is one file exporting a CliResource; adding one is adding it to this table.
 * stdout carries the result only (one JSON document with --json); errors go to stderr with exit
 * code 2 for wrong usage and 1 for anything else, and then stdout stays empty.
 */

const RESOURCES: readonly CliResource[] = [workspaces, keys, users, webhooks, playbooks, automation, imports];

const GLOBAL_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function commandLine(resource: CliResource, name: string, command: CliCommand): string {
  return `  csr ${resource.name} ${name} ${command.usage}`.trimEnd() + `\n      ${command.description}`;
}

function usage(only?: CliResource, commandName?: string): string {
  const lines: string[] = ['Usage: csr <resource> <command> [arguments] [--json]', ''];
  for (const resource of only ? [only] : RESOURCES) {
    lines.push(`${resource.name}: ${resource.description}`);
    for (const [name, command] of Object.entries(resource.commands)) {
      if (commandName === undefined || commandName === name) lines.push(commandLine(resource, name, command));
    }
    lines.push('');
  }
  lines.push(
    'Every command takes --json and then prints exactly one JSON document on stdout.',
    'Errors go to stderr, with exit code 2 for wrong usage and 1 for anything else.',
    'The tool works on the stores in DATA_DIR (default ./data), also while the server runs.',
  );
  return `${lines.join('\n')}\n`;
}

/** A usage error that knows which part of the usage to show. */
class ScopedUsageError extends UsageError {
  constructor(
    message: string,
    readonly resource?: CliResource,
    readonly command?: string,
  ) {
    super(message);
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

/** `--help` anywhere answers the usage of what was named so far (as a usage error: exit 2). */
function parse(argv: string[]): Invocation {
  let json = false;
  let index = 0;
  for (; index < argv.length && argv[index]!.startsWith('-'); index++) {
    const flag = argv[index]!;
    if (flag === '--json') json = true;
    else if (flag === '--help' || flag === '-h') throw new ScopedUsageError('');
    else throw new ScopedUsageError(`unknown option ${flag} (options come after the command)`);
  }
  const [resourceName, commandName, ...rest] = argv.slice(index);
  if (resourceName === undefined) throw new ScopedUsageError('missing command');
  const resource = RESOURCES.find((candidate) => candidate.name === resourceName);
  if (!resource) throw new ScopedUsageError(`unknown command "${resourceName}"`);
  if (commandName === undefined || commandName.startsWith('-')) {
    const asked = commandName === '--help' || commandName === '-h';
    throw new ScopedUsageError(asked ? '' : `missing ${resource.name} command`, resource);
  }
  const command = Object.hasOwn(resource.commands, commandName) ? resource.commands[commandName] : undefined;
  if (!command) throw new ScopedUsageError(`unknown command "${resource.name} ${commandName}"`, resource);

  let parsed: { values: OptionValues; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, options: { ...command.options, ...GLOBAL_OPTIONS }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ScopedUsageError(error instanceof Error ? error.message : String(error), resource, commandName);
  }
  const { values, positionals } = parsed;
  if (values.help === true) throw new ScopedUsageError('', resource, commandName);
  const expected = command.positionals ?? [];
  if (positionals.length < expected.length) {
    throw new ScopedUsageError(`missing <${expected[positionals.length]!}>`, resource, commandName);
  }
  if (positionals.length > expected.length) {
    throw new ScopedUsageError(`unexpected argument "${positionals[expected.length]!}"`, resource, commandName);
  }
  for (const name of command.required ?? []) {
    if (values[name] === undefined) throw new ScopedUsageError(`missing option --${name}`, resource, commandName);
  }
  return { resource, commandName, command, positionals, values, json: json || values.json === true };
}

interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
}

async function run(argv: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  let invocation: Invocation;
  try {
    invocation = parse(argv);
  } catch (error) {
    const scoped = error as ScopedUsageError;
    io.stderr(`${scoped.message ? `csr: ${scoped.message}\n\n` : ''}${usage(scoped.resource, scoped.command)}`);
    return 2;
  }
  try {
    const context = await openCliContext(loadConfig(env));
    let result: unknown;
    try {
      result = await invocation.command.run({ positionals: invocation.positionals, values: invocation.values }, context);
    } finally {
      await context.close();
    }
    const { command, json } = invocation;
    io.stdout(json ? formatJson(result) : command.text ? command.text(result as never) : formatText(result));
    return command.exitCode ? command.exitCode(result as never) : 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`csr: ${error.message}\n\n${usage(invocation.resource, invocation.commandName)}`);
      return 2;
    }
    io.stderr(`csr: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

process.exitCode = await run(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

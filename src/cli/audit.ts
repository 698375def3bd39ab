import { once } from 'node:events';
import { exportEvents } from '../../queries/auditExport.js';
import { verifyAudit, type VerifyResult } from '../../queries/auditVerify.js';
import { NotFound } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { loadCatalogue } from '../setup/catalogues.js';
import { stringOption, UsageError, type CliContext, type CommandArgs, type CliResource } from './context.js';

/**
 * `csr audit export` (NDJSON of a workspace's events, in log order) and `csr audit verify` (the
 * hash chain and the read model against the log). docs/auditing.md says what each proves.
 */

async function workspaceId(context: CliContext, slug: string): Promise<string> {
  const workspace = await context.backends.setup.workspaceBySlug(slug);
  if (!workspace) throw new NotFound(`no workspace with slug "${slug}"`);
  return workspace.id;
}

function moment(values: CommandArgs['values'], name: string): Date | undefined {
  const raw = stringOption(values, name);
  if (raw === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(ms)) throw new UsageError(`--${name} must be an ISO 8601 date or date-time such as 2024-05-01T00:00:00Z, got "${raw}"`);
  return new Date(ms);
}

/** A progress line on stderr, at most once a second, only where a person watches (a terminal). */
function progressLine(stderr: CommandArgs['stderr'], what: string, unit = 'events read'): { tick(count: number): void; end(): void } {
  let last = 0;
  let shown = false;
  return {
    tick(count) {
      if (!stderr.isTTY || Date.now() - last < 1000) return;
      last = Date.now();
      shown = true;
      stderr.write(`\r${what}: ${count.toLocaleString('en-US')} ${unit}`);
    },
    end() {
      if (shown) stderr.write('\n');
    },
  };
}

async function write(stdout: NodeJS.WritableStream, text: string): Promise<void> {
  if (!stdout.write(text)) await once(stdout, 'drain');
}

function verifyText(result: VerifyResult): string {
  const lines = [result.ok ? 'ok' : 'FAILED'];
  lines.push(`events: ${result.events} (${result.chained} chained${result.unchained > 0 ? `, ${result.unchained} written before the chain began and not covered` : ''}; chain per ${result.scope === 'log' ? 'log' : 'stream'})`);
  lines.push(`head hash: ${result.head}`);
  lines.push(`records compared with the read model: ${result.records}`);
  if (result.firstBreak) {
    const broken = result.firstBreak;
    lines.push(`chain broken at position ${broken.position} (event ${broken.eventId}): ${broken.reason}`);
  }
  for (const difference of result.differences) {
    lines.push(`read model differs: ${difference.object} ${difference.id} (workspace ${difference.workspaceId}): ${difference.problem}`);
  }
  return `${lines.join('\n')}\n`;
}

export const audit: CliResource = {
  name: 'audit',
  description: "auditors' tools: export the log, verify it",
  commands: {
    export: {
      usage: '--workspace <slug> [--since <time>] [--until <time>] [--object <key>] [--record <id>]',
      description: "print a workspace's events as NDJSON (one per line, in log order): record and Setup changes",
      options: { workspace: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' }, object: { type: 'string' }, record: { type: 'string' } },
      required: ['workspace'],
      streams: true,
      async run({ values, stdout, stderr }, context) {
        const id = await workspaceId(context, stringOption(values, 'workspace')!);
        const object = stringOption(values, 'object');
        if (object !== undefined && !(await loadCatalogue(context.backends.events, id)).object(object)) throw new UsageError(`unknown object "${object}"`);
        const record = stringOption(values, 'record');
        if (record !== undefined && !isUuid(record)) throw new UsageError(`--record must be a record id (a UUID), got "${record}"`);
        const filter = { workspaceId: id, since: moment(values, 'since'), until: moment(values, 'until'), object, recordId: record };
        if (filter.since && filter.until && filter.since > filter.until) throw new UsageError('the window runs the wrong way: --since must not be after --until');
        const progress = progressLine(stderr, 'audit export');
        for await (const lines of exportEvents(context.backends.events, filter, (scanned) => progress.tick(scanned))) {
          let chunk = '';
          for (const line of lines) chunk += `${JSON.stringify(line)}\n`;
          await write(stdout, chunk);
        }
        progress.end();
        return null;
      },
    },
    verify: {
      usage: '[--workspace <slug>]',
      description: 're-check the hash chain over the whole log and compare every record (of one workspace) with the read model; exit 1 on any finding',
      options: { workspace: { type: 'string' } },
      async run({ values, stderr }, context) {
        const slug = stringOption(values, 'workspace');
        const progress = progressLine(stderr, 'audit verify', 'records checked');
        const result = await verifyAudit(context.backends, {
          ...(slug !== undefined ? { workspaceId: await workspaceId(context, slug) } : {}),
          progress: (count) => progress.tick(count),
        });
        progress.end();
        return result;
      },
      text: verifyText,
      failed: (result: VerifyResult) => !result.ok,
    },
  },
};

import { REACTORS } from '../../projections/reactors.js';
import { registeredProjections } from '../../projections/registry.js';
import type { Projection } from '../../projections/projection.js';
import { Catalogues } from '../setup/catalogues.js';
import type { CliContext } from './context.js';
import { rebuildReadModel, type RebuildResult } from '../../projections/rebuild.js';
import type { RebuildProgress } from '../../projections/rebuildProgress.js';
import { projectionStatus, LAG_COUNT_LIMIT, type StatusReport } from '../../projections/status.js';
import { UsageError, type CliResource } from './context.js';
import { progressBar } from './progressBar.js';

/** `csr projections status|rebuild`: operators' view of the projections, and blue/green rebuilds. */

function statusTable(report: StatusReport): string {
  const header = ['NAME', 'VERSION', 'GEN', 'STATE', 'CHECKPOINT', 'LAG', 'LAG (s)', 'EVENTS/S', 'LAST ERROR'];
  const rows = report.projections.map((p) => [
    p.name,
    p.version === null ? '-' : String(p.version),
    p.generation === null ? '-' : String(p.generation),
    p.state,
    p.checkpoint === null ? '-' : p.checkpoint.split(':')[0]!.replace(/^0+(?=\d)/, ''),
    p.lagEvents >= LAG_COUNT_LIMIT ? `>=${LAG_COUNT_LIMIT}` : String(p.lagEvents),
    (p.lagMs / 1000).toFixed(1),
    String(p.eventsPerSecond),
    p.lastError === null ? '-' : `${p.lastErrorAt} ${p.lastError}`,
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((cells) => cells[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd();
  const head = report.head === null ? 'empty' : report.head.split(':')[0]!.replace(/^0+(?=\d)/, '');
  return `${[line(header), ...rows.map(line)].join('\n')}\nlog head: ${head}\n`;
}

export const projections: CliResource = {
  name: 'projections',
  description: 'see every projection, rebuild read models with no downtime',
  commands: {
    status: {
      usage: '',
      description: 'each projection: version, generation, state, checkpoint, lag, events/s, last error',
      async run(_args, context) {
        return withProjections(context, (projections) => projectionStatus(context.backends, [...projections, ...REACTORS]));
      },
      text: (report: StatusReport) => statusTable(report),
    },
    rebuild: {
      usage: '<name> | --all [--restart]',
      description: 'build a new generation beside the live one and switch reads to it once caught up (resumes an interrupted one)',
      options: { all: { type: 'boolean' }, restart: { type: 'boolean' } },
      optionalPositionals: ['name'],
      async run({ positionals, values }, context) {
        const [name] = positionals;
        if ((name === undefined) === (values.all !== true)) throw new UsageError('name one projection, or give --all');
        return withProjections(context, async (all) => {
          const chosen = values.all === true ? all.filter((p) => p.kind === 'read-model') : [all.find((p) => p.name === name)];
          if (chosen[0] === undefined) {
            throw new UsageError(`no projection "${name}" (there are: ${all.map((p) => p.name).join(', ')})`);
          }
          const show = values.json === true ? jsonLines : process.stderr.isTTY ? progressBar() : () => undefined;
          const results: RebuildResult[] = [];
          for (const projection of chosen) {
            results.push(
              await rebuildReadModel(context.backends, projection!, {
                restart: values.restart === true,
                onProgress: (progress) => show(projection!.name, progress),
              }),
            );
          }
          return values.all === true ? results : results[0];
        });
      },
    },
  },
};

/** The registered projections, with the catalogues they read record names from, followed while `fn` runs. */
async function withProjections<T>(context: CliContext, fn: (projections: Projection[]) => Promise<T>): Promise<T> {
  const catalogues = new Catalogues(context.backends.events);
  await catalogues.watch();
  try {
    return await fn(registeredProjections({ catalogues }));
  } finally {
    await catalogues.close();
  }
}

function jsonLines(name: string, progress: RebuildProgress): void {
  process.stderr.write(`${JSON.stringify({ projection: name, ...progress })}\n`);
}

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The house's rules for imports (docs/design.md): no circles, the layers point down, and only
 * the composition root chooses an adapter.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_DIRS = ['src', 'commands', 'queries', 'projections'];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(path) ? [path] : [];
  });
}

/** file -> the project files it imports (type-only imports count: they couple the code too). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of SOURCE_DIRS.flatMap(sourceFiles)) {
    const text = readFileSync(join(root, file), 'utf8');
    const targets = [...text.matchAll(/(?:from\s+|import\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => {
      const target = normalize(join(dirname(file), match[1]!.replace(/\.js$/, '.ts')));
      // A JSX module (the Setup page) is imported as .js too: it is the .tsx beside it.
      return existsSync(join(root, target)) || !existsSync(join(root, `${target}x`)) ? target : `${target}x`;
    });
    graph.set(file, targets);
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(stack.slice(stack.indexOf(next)).concat(next));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

const graph = importGraph();
const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));
/** Shared on purpose: webhook payloads are "exactly the REST API record format" (spec 6.3). */
const SHARED = ['queries/recordFormat.ts'];
const isAdapter = (file: string) => /^src\/(eventstore|readstore|setup|webhooks|idempotency|privacy)\/(sqlite|eventstoredb|mongodb|postgres)\//.test(file);

describe('imports', () => {
  it('form no circle', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('choose an adapter only in the composition root (src/backends.ts) or inside the adapters', () => {
    const offending = edges.filter(({ from, to }) => isAdapter(to) && !isAdapter(from) && from !== 'src/backends.ts');
    expect(offending).toEqual([]);
  });

  it.each([
    ['src/schema', ['commands', 'queries', 'projections', 'src/http', 'src/cli']],
    ['src/core', ['src/', 'commands', 'queries', 'projections']],
    ['commands', ['projections', 'queries', 'src/http', 'src/cli']],
    ['queries', ['commands', 'projections', 'src/http', 'src/cli']],
    ['projections', ['commands', 'queries', 'src/http', 'src/cli']],
    ['src/webhooks', ['commands', 'queries', 'projections', 'src/http', 'src/cli']],
  ])('from %s never point up into %j', (layer, above) => {
    const offending = edges.filter(
      ({ from, to }) =>
        from.startsWith(`${layer}/`) && !to.startsWith(`${layer}/`) && above.some((upper) => to.startsWith(upper)) && !SHARED.includes(to),
    );
    expect(offending.map(({ from, to }) => `${from} -> ${to}`)).toEqual([]);
  });

  it('leave no runtime or SQLite plumbing loose at the top of src/', () => {
    const loose = readdirSync(join(root, 'src')).filter((name) => name.endsWith('.ts'));
    expect(loose.sort()).toEqual(['backends.ts', 'config.ts', 'main.ts', 'service.ts']);
  });

  it('are all relative to files that exist', () => {
    const missing = edges.filter(({ to }) => !graph.has(to) && !relative(root, join(root, to)).startsWith('node_modules'));
    expect(missing).toEqual([]);
  });
});

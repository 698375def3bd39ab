import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The house's rules for imports (docs/design.md): no circles, the layers point down, and only
 * the composition root chooses an adapter. The layer order is not written here: it is read from
 * the design doc's `layers` block, so the drawing and the check cannot differ.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_DIRS = ['src', 'commands', 'queries', 'projections', 'bench'];

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

/** The `layers` block of docs/design.md, top first: each line's entries (folders or files), comments after `#` dropped. */
function layersFromDesignDoc(): string[][] {
  const doc = readFileSync(join(root, 'docs/design.md'), 'utf8');
  const block = /```layers\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error('docs/design.md has no ```layers block');
  return block[1]!
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line !== '')
    .map((line) => line.split(/\s+/));
}

const graph = importGraph();
const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));
const layers = layersFromDesignDoc();
/** Entry -> its line's index counted from the bottom (0 = lowest). */
const levels = new Map(layers.flatMap((line, index) => line.map((entry) => [entry, layers.length - 1 - index] as const)));
/** The longest layer entry that holds a file: the entry itself or a folder above it. */
function entryOf(file: string): string | null {
  let best: string | null = null;
  for (const entry of levels.keys()) {
    if ((file === entry || file.startsWith(`${entry}/`)) && (best === null || entry.length > best.length)) best = entry;
  }
  return best;
}
/** The design doc's one exception: webhook payloads are "exactly the REST API record format" (spec 6.3). */
const EXCEPTIONS = [{ from: 'src/webhooks', to: 'queries/recordFormat.ts' }];
/**
 * Imports that point up and are not fixed yet, each with the reason it is still here: empty since
 * issue 40, and it only ever shrinks. A fixed one left here fails the test too.
 */
const NOT_YET_DOWN: string[] = [];
const isAdapter = (file: string) => /^src\/(eventstore|readstore|setup|webhooks|idempotency|privacy|ratelimit)\/(sqlite|eventstoredb|mongodb|postgres)\//.test(file);

describe('imports', () => {
  it('form no circle', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('choose an adapter only in the composition root (src/backends.ts) or inside the adapters (the benchmarks measure adapters alone)', () => {
    const offending = edges.filter(({ from, to }) => isAdapter(to) && !isAdapter(from) && from !== 'src/backends.ts' && !from.startsWith('bench/'));
    expect(offending).toEqual([]);
  });

  it('reach src/backends.ts only from the two composition roots: the server (src/main.ts, src/service.ts) and `csr` (src/cli)', () => {
    const roots = (file: string) => file === 'src/main.ts' || file === 'src/service.ts' || file.startsWith('src/cli/');
    const offending = edges.filter(({ from, to }) => to === 'src/backends.ts' && !roots(from)).map(({ from, to }) => `${from} -> ${to}`);
    expect(offending).toEqual([]);
  });

  it('name every source folder and file in the layers of docs/design.md', () => {
    expect([...graph.keys()].filter((file) => entryOf(file) === null)).toEqual([]);
    const unknown = [...levels.keys()].filter((entry) => !existsSync(join(root, entry)));
    expect(unknown).toEqual([]);
  });

  it('point down the layers of docs/design.md, peers never into each other', () => {
    const upward = edges.filter(({ from, to }) => {
      const [source, target] = [entryOf(from), entryOf(to)];
      if (source === null || target === null || source === target) return false;
      if (EXCEPTIONS.some((exception) => source === exception.from && to === exception.to)) return false;
      return levels.get(target)! >= levels.get(source)!;
    });
    expect(upward.map(({ from, to }) => `${from} -> ${to}`).sort()).toEqual([...NOT_YET_DOWN].sort());
  });

  it('leave the pure decider on the shared vocabulary alone: no store port, no store', () => {
    const stores = /^src\/(eventstore|readstore|setup|webhooks|idempotency|privacy)\//;
    const decider = ['commands/record/decider.ts'];
    expect(edges.filter(({ from, to }) => decider.includes(from) && stores.test(to))).toEqual([]);
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

import { readFileSync } from 'node:fs';

/**
 * `node dist/bench/profileTop.js <file.cpuprofile> [n]`: the n functions with the most self time
 * in a V8 CPU profile (from BENCH_PROFILE), as a markdown table for docs/performance.md.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const [file, count = '20'] = process.argv.slice(2);
if (!file) throw new Error('usage: profileTop <file.cpuprofile> [n]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map<string, number>();
for (const sample of profile.samples) {
  const { functionName, url, lineNumber } = byId.get(sample)!.callFrame;
  const where = url ? `${url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}` : '';
  const name = `${functionName || '(anonymous)'} ${where}`.trim();
  self.set(name, (self.get(name) ?? 0) + 1);
}
const busy = profile.samples.filter((sample) => !['(idle)', '(program)'].includes(byId.get(sample)!.callFrame.functionName)).length;
console.log(`${profile.samples.length} samples, ${busy} busy (not idle, not "program")\n`);
console.log('| self % of busy | function |\n|---|---|');
for (const [name, samples] of [...self].filter(([name]) => !name.startsWith('(idle)') && !name.startsWith('(program)')).sort((a, b) => b[1] - a[1]).slice(0, Number(count))) {
  console.log(`| ${((100 * samples) / busy).toFixed(1)} | \`${name}\` |`);
}

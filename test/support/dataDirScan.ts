import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every file under `dir` (recursively) whose bytes hold `needle` as UTF-8: the erasure tests' disk scan. */
export function filesHolding(dir: string, needle: string): string[] {
  const bytes = Buffer.from(needle, 'utf8');
  const found: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (readFileSync(path).includes(bytes)) found.push(path);
    }
  };
  walk(dir);
  return found;
}

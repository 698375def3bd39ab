import { describe, expect, it } from 'vitest';
import { progressReporter } from '../../src/cli/progress.js';

describe('import progress', () => {
  it('on a terminal: one line with rows, rate, share of the file and time left, ended by a newline', () => {
    const written: string[] = [];
    let bytes = 0;
    const progress = progressReporter({ isTTY: true, write: (text) => (written.push(text), true) }, 1000, () => bytes);
    bytes = 500;
    progress.update(2000);
    progress.done();
    expect(written[0]).toMatch(/^\r2,000 rows · [\d,]+ rows\/s · 50% · ETA \d+s/);
    expect(written.at(-1)).toBe('\n');
  });

  it('prints nothing when stderr is not a terminal', () => {
    const written: string[] = [];
    const progress = progressReporter({ isTTY: false, write: (text) => (written.push(text), true) }, 1000, () => 1000);
    progress.update(10);
    progress.done();
    expect(written).toEqual([]);
  });
});

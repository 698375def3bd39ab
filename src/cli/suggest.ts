/** "did you mean ...?" for a mistyped command or option: the closest known word, if close enough. */

function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The known word nearest to `given` within a third of its length (at least 2 edits), or null. */
export function closest(given: string, known: readonly string[]): string | null {
  let best: { word: string; distance: number } | null = null;
  for (const word of known) {
    const d = distance(given.toLowerCase(), word.toLowerCase());
    if (!best || d < best.distance) best = { word, distance: d };
  }
  const allowed = Math.max(2, Math.floor(given.length / 3));
  return best && best.distance <= allowed ? best.word : null;
}

/** ` Did you mean "x"?` or nothing. */
export function didYouMean(given: string, known: readonly string[], prefix = ''): string {
  const word = closest(given, known);
  return word ? ` Did you mean "${prefix}${word}"?` : '';
}

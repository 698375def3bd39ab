import type { RebuildProgress } from '../../projections/rebuildProgress.js';

/** A one-line progress bar on stderr (a terminal): events done, share of the log, rate, ETA. */

const WIDTH = 30;

function duration(seconds: number | null): string {
  if (seconds === null) return '?';
  if (seconds < 60) return `${seconds}s`;
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
}

export function progressBar(): (name: string, progress: RebuildProgress) => void {
  return (name, progress) => {
    const filled = Math.round(progress.fraction * WIDTH);
    const bar = `${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}`;
    const percent = (progress.fraction * 100).toFixed(1).padStart(5);
    const line = `${name} [${bar}] ${percent}%  ${progress.events} events  ${progress.eventsPerSecond}/s  ETA ${duration(progress.etaSeconds)}`;
    process.stderr.write(`\r${line}\u001b[K${progress.phase === 'done' ? '\n' : ''}`);
  };
}

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/process.js';

/**
 * The stop signals of a real process, each sent for certain apart from the other (ctrlC.test.ts
 * types Ctrl-C as a user does, where the kernel may merge the terminal's SIGINT and npm's copy).
 * The process is the built `stopSignals` and nothing else: it stops 300 ms after the first signal,
 * long enough for the second to arrive while it is stopping.
 */

const program = `
import { stopSignals } from './dist/src/runtime/stopSignals.js';
import { createLogger } from './dist/src/core/logger.js';
const logger = createLogger('info', 'json');
setInterval(() => {}, 1000); // a server's listening socket, which keeps the process up until it stops
const first = await Promise.race([stopSignals(logger), new Promise(() => console.log('"ready"'))]);
logger.info({ first }, 'shutting down');
setTimeout(() => { logger.info('stopped'); process.exit(0); }, 300);
`;

async function stopWith(signals: NodeJS.Signals[]): Promise<{ code: number | null; signal: string | null; lines: { msg?: string; signal?: string; first?: string }[] }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', program], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit');
  while (!output.includes('"ready"')) await new Promise((resolve) => setTimeout(resolve, 10));
  child.kill(signals[0]);
  while (!output.includes('shutting down')) await new Promise((resolve) => setTimeout(resolve, 5));
  for (const signal of signals.slice(1)) child.kill(signal);
  const [code, signal] = (await exited) as [number | null, string | null];
  const lines = output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; signal?: string; first?: string });
  return { code, signal, lines };
}

describe('stop signals (a real process)', () => {
  it.each([
    { given: 'SIGINT, then SIGINT while stopping (Ctrl-C under npm start)', signals: ['SIGINT', 'SIGINT'] as NodeJS.Signals[], first: 'SIGINT', again: ['SIGINT'] },
    { given: 'SIGTERM, then SIGINT and SIGTERM while stopping', signals: ['SIGTERM', 'SIGINT', 'SIGTERM'] as NodeJS.Signals[], first: 'SIGTERM', again: ['SIGINT', 'SIGTERM'] },
    { given: 'one SIGTERM', signals: ['SIGTERM'] as NodeJS.Signals[], first: 'SIGTERM', again: [] },
  ])('given $given: one stop, every later signal is "still stopping", exit code 0', async ({ signals, first, again }) => {
    const { code, signal, lines } = await stopWith(signals);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(lines.filter((line) => line.msg === 'shutting down')).toEqual([expect.objectContaining({ first })]);
    const stillStopping = lines.filter((line) => line.msg?.includes('again: still stopping'));
    // Two different signals sent together may be handled in either order.
    expect(stillStopping.map((line) => line.signal).sort()).toEqual(again);
    expect(lines.at(-1)?.msg).toBe('stopped');
  }, 20_000);
});

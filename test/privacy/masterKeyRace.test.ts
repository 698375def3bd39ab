import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Processes starting on a new DATA_DIR at once (API processes, role threads, `csr`) all make or
 * read DATA_DIR/master.key. None may see a half-written file: each must end with the same key.
 * Threads released together by one barrier make the race as tight as the machine allows.
 */

const root = mkdtempSync(join(tmpdir(), 'csr-master-race-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const THREADS = 6;
const ROUNDS = 150;

const workerSource = `
const { workerData, parentPort } = require('node:worker_threads');
const { join } = require('node:path');
import(workerData.module).then(({ loadMasterKey }) => {
  const barrier = new Int32Array(workerData.barrier);
  const results = [];
  for (let round = 0; round < workerData.rounds; round++) {
    Atomics.add(barrier, round, 1);
    while (Atomics.load(barrier, round) < workerData.threads) {}
    try {
      results.push(loadMasterKey(join(workerData.root, String(round)), null).toString('hex'));
    } catch (error) {
      results.push('error: ' + error.message);
    }
  }
  parentPort.postMessage(results);
});
`;

describe('the master key made by several processes at once', () => {
  it('is one key for all of them, never a half-written file', async () => {
    const { mkdirSync } = await import('node:fs');
    for (let round = 0; round < ROUNDS; round++) mkdirSync(join(root, String(round)));
    const barrier = new SharedArrayBuffer(4 * ROUNDS);
    const module = new URL('../../dist/src/privacy/masterKey.js', import.meta.url).href;
    const runs = Array.from({ length: THREADS }, () => {
      const worker = new Worker(workerSource, { eval: true, workerData: { module, barrier, root, rounds: ROUNDS, threads: THREADS } });
      return new Promise<string[]>((resolve, reject) => worker.once('message', resolve).once('error', reject));
    });
    const results = await Promise.all(runs);
    for (let round = 0; round < ROUNDS; round++) {
      const keys = new Set(results.map((result) => result[round]));
      expect([...keys], `round ${round}`).toHaveLength(1);
      expect([...keys][0]).toMatch(/^[0-9a-f]{64}$/);
    }
  }, 60_000);
});
